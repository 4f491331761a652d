CREATE TABLE "leaderboard_sync_state" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"finished_at" timestamp with time zone NOT NULL,
	"failed" boolean NOT NULL
);

--> statement-breakpoint
-- The latest finished run so far, from the job's runs: freshness reads this table from now on.
INSERT INTO "leaderboard_sync_state" ("id", "finished_at", "failed")
SELECT 1, "finished_at", NOT "ok" FROM "job_runs"
WHERE "name" = 'leaderboard-sync' AND "ok" IS NOT NULL AND "finished_at" IS NOT NULL
ORDER BY "started_at" DESC LIMIT 1;
