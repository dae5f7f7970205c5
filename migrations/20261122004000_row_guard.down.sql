DROP FUNCTION IF EXISTS relay_expect_unchanged(boolean);
