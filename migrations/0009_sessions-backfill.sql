-- docs/decisions.md §10.2/§10.5: every refresh family becomes a session row
-- (id = family). A family whose tokens are all revoked is a revoked session;
-- otherwise it lives until its newest token expires. User agent and address
-- were never recorded before: null ("unknown").
INSERT INTO "sessions" ("id", "user_id", "created_at", "last_used_at", "expires_at", "revoked_at")
SELECT "family", min("user_id"::text)::uuid, min("created_at"), max("created_at"), max("expires_at"),
       CASE WHEN bool_and("revoked_at" IS NOT NULL) THEN max("revoked_at") END
FROM "refresh_tokens"
GROUP BY "family"
ON CONFLICT ("id") DO NOTHING;
