import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/desired/schema/index.ts',
  out: './drizzle',
});
