-- docs/decisions.md §13.1: the outbox had one row per (notification, channel);
-- the ledger has one per (notification, channel, device or chat). Pending
-- rows are expanded to the user's current devices and chat; rows without a
-- target (the old shape) then go, settled ones included (they only answered
-- "was it delivered?" for a day).
INSERT INTO "notification_deliveries" ("notification_id", "user_id", "channel", "target_kind", "target", "status", "attempts", "next_attempt_at", "deadline_at", "created_at", "updated_at")
SELECT d."notification_id", n."user_id", 'push', 'device', p."token", 'pending', 0, d."next_attempt_at", n."created_at" + interval '1 hour', d."created_at", d."updated_at"
FROM "notification_deliveries" d
JOIN "notifications" n ON n."id" = d."notification_id"
JOIN "push_devices" p ON p."user_id" = n."user_id"
WHERE d."target" IS NULL AND d."status" = 'pending' AND d."channel" = 'push';
--> statement-breakpoint
INSERT INTO "notification_deliveries" ("notification_id", "user_id", "channel", "target_kind", "target", "status", "attempts", "next_attempt_at", "deadline_at", "created_at", "updated_at")
SELECT d."notification_id", n."user_id", 'messenger', 'chat', b."chat_id"::text, 'pending', 0, d."next_attempt_at", n."created_at" + interval '1 hour', d."created_at", d."updated_at"
FROM "notification_deliveries" d
JOIN "notifications" n ON n."id" = d."notification_id"
JOIN "messenger_bindings" b ON b."user_id" = n."user_id"
WHERE d."target" IS NULL AND d."status" = 'pending' AND d."channel" = 'messenger';
--> statement-breakpoint
DELETE FROM "notification_deliveries" WHERE "target" IS NULL;
