// The least an Astro project needs to build the blog collection.
import { defineConfig } from 'astro/config';

export default defineConfig({ site: 'https://example.com', telemetry: false });
