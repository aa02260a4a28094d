import { Hono } from 'hono';
import type { AppEnv } from '../env';

export const lookup = new Hono<AppEnv>();
