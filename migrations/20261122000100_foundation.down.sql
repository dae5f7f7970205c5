DROP TABLE IF EXISTS relay_state;
