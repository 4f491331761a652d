import { defineConfig } from 'drizzle-kit';

// `npm run db:generate` turns the schema in drizzle/ into SQL in migrations/.
// The service applies migrations itself at start (src/db/migrate.ts), so no
// credentials are needed here.
export default defineConfig({
  dialect: 'postgresql',
  schema: './drizzle/index.ts',
  out: './migrations',
});
