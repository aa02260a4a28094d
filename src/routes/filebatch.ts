import { Hono } from 'hono';
import type { AppEnv } from '../env';

export const filebatch = new Hono<AppEnv>();
