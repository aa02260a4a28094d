import { Hono } from 'hono';
import type { AppEnv } from '../env';

export const adminBins = new Hono<AppEnv>();
