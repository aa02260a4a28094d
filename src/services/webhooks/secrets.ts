/**
 * Endpoint signing secrets: `whsec_` + 43 base64url characters (256 random bits), shown once and
 * stored sealed (AES-256-GCM, lib/card-crypto) under a key derived from CARD_DATA_KEY for this
 * purpose only, bound to "{merchant id}:{endpoint id}" so a sealed secret copied to another row
 * does not open.
 */
import { open, seal } from '../../lib/card-crypto';
import { randomSecret } from '../../lib/crypto';
import { derivedKeyBase64 } from '../../lib/derived-keys';

const PURPOSE = 'binbatch webhook secret v1';

export function newSigningSecret(): string {
  return `whsec_${randomSecret(32)}`;
}

export async function sealSigningSecret(dataKey: string, merchantId: string, endpointId: string, secret: string): Promise<string> {
  return seal(await derivedKeyBase64(dataKey, PURPOSE), secret, `${merchantId}:${endpointId}`);
}

export async function openSigningSecret(dataKey: string, merchantId: string, endpointId: string, sealed: string): Promise<string | null> {
  return open(await derivedKeyBase64(dataKey, PURPOSE), sealed, `${merchantId}:${endpointId}`);
}
