import { Hono } from 'hono';
import type { AppEnv } from '../env';

export const vault = new Hono<AppEnv>();
