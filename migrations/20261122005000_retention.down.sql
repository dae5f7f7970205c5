DROP INDEX IF EXISTS outbox_events_final_age;
DROP INDEX IF EXISTS callback_inbox_final_age;
DROP INDEX IF EXISTS catalog_sku_changes_changed_at;
