-- Optimistic one-statement writes (the outcome of a create call right after its reservation): the
-- statement names the row versions (xmin) it was computed from, and this check, evaluated on the
-- row's latest version once its lock is held, aborts the whole statement when another transaction
-- changed the row meanwhile. The caller then does the work again in a locking transaction.
CREATE FUNCTION relay_expect_unchanged(unchanged boolean) RETURNS boolean
  LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT unchanged THEN
    RAISE EXCEPTION 'row changed since it was read' USING ERRCODE = 'RL001';
  END IF;
  RETURN true;
END
$$;
