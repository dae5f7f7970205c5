DROP TABLE upstream_budget_grants;
DROP TABLE upstream_budget_keys;
