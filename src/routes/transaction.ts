import { Hono } from 'hono';
import type { AppEnv } from '../env';

export const transaction = new Hono<AppEnv>();
