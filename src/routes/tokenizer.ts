import { Hono } from 'hono';
import type { AppEnv } from '../env';

export const tokenizer = new Hono<AppEnv>();
