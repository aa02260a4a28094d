/**
 * A receipt as the customer reads it: a plain-text part and an HTML part in one static layout
 * (docs/receipts.md, "What a receipt says"). What the card networks ask a receipt to show: the
 * merchant's name (also in the subject), its city and region, its website or customer-service
 * contact, its refund policy, the date, the transaction type, the amount and currency with its
 * parts, the authorization code, the card brand and the last four digits. Never more digits, never
 * the expiry, never a CVC: the facts hold none of them (facts.ts).
 *
 * Everything that came with a request or a merchant's settings is text here: escaped in the HTML
 * part, and never in a header but the subject and the From name, which take the merchant's name
 * with control characters removed (the admin API refuses them already).
 */
import { EMAIL_SERVICE, HALF } from '../../lib/platform-limits';
import type { ReceiptEntry, ReceiptKind } from '../../storage/receipt-outbox';
import type { ReceiptSettings } from '../../storage/receipt-settings';

export interface ReceiptMerchant {
  name: string;
  settings: ReceiptSettings;
}

/** The `send_email` binding's message builder, as the sender hands it over. */
export interface ReceiptMessage {
  from: { email: string; name: string };
  to: string;
  replyTo?: string;
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
}

const TITLES: Record<ReceiptKind, string> = {
  sale: 'Receipt',
  authorization: 'Authorization receipt',
  credit: 'Credit receipt',
  refund: 'Refund receipt',
  void: 'Void receipt',
};

const TYPES: Record<ReceiptKind, string> = {
  sale: 'Sale',
  authorization: 'Authorization (the amount is held on the card until the merchant captures it)',
  credit: 'Credit (money paid to your card)',
  refund: 'Refund',
  void: 'Void (the transaction was cancelled before it settled: nothing is charged)',
};

const BRANDS: Record<string, string> = {
  visa: 'Visa',
  mastercard: 'Mastercard',
  amex: 'American Express',
  discover: 'Discover',
  diners: 'Diners Club',
  jcb: 'JCB',
  unionpay: 'UnionPay',
  maestro: 'Maestro',
  mir: 'Mir',
  elo: 'Elo',
  rupay: 'RuPay',
};

/** HTML text: the five characters that could start markup or end an attribute, as entities. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Text for a header or a line: control characters (a line break included) become spaces. */
function oneLine(value: string): string {
  return value.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

/** One formatter per currency: building an Intl.NumberFormat costs more than rendering the rest of a receipt. */
const formats = new Map<string, { format: Intl.NumberFormat; digits: number }>();

/** Minor units in the currency's own format: 1030 USD → "$10.30". */
export function formatMoney(minor: number, currency: string): string {
  let entry = formats.get(currency);
  if (!entry) {
    const format = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    entry = { format, digits: format.resolvedOptions().maximumFractionDigits ?? 2 };
    formats.set(currency, entry);
  }
  return entry.format.format(minor / 10 ** entry.digits);
}

/** "2026-11-26 14:03 UTC": the customer's zone is not known, so the zone is said. */
function formatDate(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

function brandName(brand: string | null): string {
  if (brand === null) return 'Card';
  return BRANDS[brand.toLowerCase()] ?? brand.charAt(0).toUpperCase() + brand.slice(1);
}

/** The receipt's message identity, for References: the same for every copy of one receipt. */
export function messageIdentity(entry: Pick<ReceiptEntry, 'transactionId' | 'kind'>, fromAddress: string): string {
  const domain = fromAddress.slice(fromAddress.lastIndexOf('@') + 1);
  return `<${entry.transactionId}.${entry.kind}@${domain}>`;
}

type Line = [label: string, value: string];

/** The receipt's lines, label and value, in the order both parts show them. */
function receiptLines(entry: ReceiptEntry): { lines: Line[]; parts: Line[] } {
  const f = entry.facts;
  const money = (minor: number) => formatMoney(minor, f.currency);
  const lines: Line[] = [
    ['Type', TYPES[entry.kind]],
    ['Date', formatDate(f.at)],
    [entry.kind === 'void' ? 'Amount voided' : entry.kind === 'refund' ? 'Amount refunded' : 'Amount', `${money(f.amount)} ${f.currency}`],
  ];
  const parts: Line[] = [];
  if (entry.kind !== 'void' && entry.kind !== 'refund') {
    if (f.surcharge > 0) parts.push(['Surcharge', money(f.surcharge)]);
    if (f.tax > 0) parts.push(['Tax', money(f.tax)]);
    if (f.shipping > 0) parts.push(['Shipping', money(f.shipping)]);
    if (f.discount > 0) parts.push(['Discount', `−${money(f.discount)}`]);
  }
  const account = f.paymentType === 'ach' ? 'Bank account' : brandName(f.brand);
  if (f.last4 !== null) lines.push(['Payment', `${account} ending in ${f.last4}`]);
  if (f.authCode !== null) lines.push(['Authorization code', f.authCode]);
  if (f.orderId !== null) lines.push(['Order', f.orderId]);
  if (f.poNumber !== null) lines.push(['PO number', f.poNumber]);
  if (f.description !== null) lines.push(['Description', f.description]);
  if (f.customerName !== null) lines.push(['Billed to', f.customerName]);
  if (entry.kind === 'refund' && f.referencedTransactionId !== null) lines.push(['Refund of transaction', f.referencedTransactionId]);
  lines.push([entry.kind === 'void' ? 'Voided transaction' : 'Transaction', entry.transactionId]);
  return { lines, parts };
}

/** The merchant's block: where it is, how to reach it, its refund policy. */
function merchantLines(merchant: ReceiptMerchant): Line[] {
  const s = merchant.settings;
  const place = [s.city, s.region, s.country].filter((part): part is string => part !== null && part !== '').join(', ');
  const lines: Line[] = [];
  if (place !== '') lines.push(['Location', place]);
  if (s.website !== null) lines.push(['Website', s.website]);
  const contact = [s.support_email, s.support_phone].filter((part): part is string => part !== null && part !== '').join(', ');
  if (contact !== '') lines.push(['Customer service', contact]);
  if (s.refund_policy !== null) lines.push(['Refund policy', s.refund_policy]);
  return lines;
}

/** The subject: the kind, the merchant's name and the amount, within the Email Service's 998 characters. */
function subjectOf(entry: ReceiptEntry, merchantName: string): string {
  const amount = entry.kind === 'void' ? '' : ` — ${formatMoney(entry.facts.amount, entry.facts.currency)}`;
  const title = `${TITLES[entry.kind]} from `;
  const room = EMAIL_SERVICE.subjectChars - title.length - amount.length;
  return `${title}${merchantName.slice(0, Math.max(1, room))}${amount}`;
}

function textPart(entry: ReceiptEntry, merchant: ReceiptMerchant, subject: string): string {
  const { lines, parts } = receiptLines(entry);
  const width = Math.max(...[...lines, ...merchantLines(merchant)].map(([label]) => label.length));
  const row = ([label, value]: Line, indent = '') => `${indent}${`${label}:`.padEnd(width + 2 - indent.length)}${value}`;
  const out = [subject, '', ...lines.slice(0, 3).map((line) => row(line)), ...parts.map((line) => row(line, '  ')), ...lines.slice(3).map((line) => row(line))];
  out.push('', merchant.name, ...merchantLines(merchant).map((line) => row(line)));
  out.push('', `Receipt ${entry.id}. Keep it for your records; reply to this email to reach ${merchant.name}.`);
  return `${out.join('\n')}\n`;
}

function htmlPart(entry: ReceiptEntry, merchant: ReceiptMerchant, subject: string): string {
  const { lines, parts } = receiptLines(entry);
  const cell = 'style="padding:4px 12px 4px 0;vertical-align:top;color:#555;width:11em"';
  const row = ([label, value]: Line, indent = false) =>
    `<tr><th scope="row" align="left" ${cell}>${indent ? '&nbsp;&nbsp;' : ''}${escapeHtml(label)}</th><td style="padding:4px 0">${escapeHtml(value)}</td></tr>`;
  const merchantRows = merchantLines(merchant).map(([label, value]) =>
    label === 'Website' && /^https:\/\/[^\s"'<>]+$/.test(value)
      ? `<tr><th scope="row" align="left" ${cell}>Website</th><td style="padding:4px 0"><a href="${escapeHtml(value)}">${escapeHtml(value)}</a></td></tr>`
      : row([label, value]),
  );
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>',
    escapeHtml(subject),
    '</title></head>',
    '<body style="margin:0;padding:24px;background:#f4f4f5;font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:15px;color:#111">',
    '<div style="max-width:560px;margin:0 auto;background:#fff;border:1px solid #ddd;border-radius:8px;padding:24px">',
    `<h1 style="font-size:20px;margin:0 0 4px">${escapeHtml(merchant.name)}</h1>`,
    `<p style="margin:0 0 16px;color:#555">${escapeHtml(TITLES[entry.kind])}</p>`,
    '<table role="presentation" style="border-collapse:collapse;width:100%">',
    ...lines.slice(0, 3).map((line) => row(line)),
    ...parts.map((line) => row(line, true)),
    ...lines.slice(3).map((line) => row(line)),
    '</table>',
    `<h2 style="font-size:15px;margin:20px 0 4px">${escapeHtml(merchant.name)}</h2>`,
    '<table role="presentation" style="border-collapse:collapse;width:100%">',
    ...merchantRows,
    '</table>',
    `<p style="margin:20px 0 0;color:#777;font-size:13px">Receipt ${escapeHtml(entry.id)}. Keep it for your records; reply to this email to reach ${escapeHtml(merchant.name)}.</p>`,
    '</div></body></html>',
    '',
  ].join('\n');
}

/**
 * The message for one receipt, from `fromAddress` (the operator's sending domain) in the
 * merchant's name, replies going to the merchant's customer-service address.
 */
export function renderReceipt(entry: ReceiptEntry, merchant: ReceiptMerchant, fromAddress: string): ReceiptMessage {
  const name = oneLine(merchant.name) || 'Merchant';
  const clean: ReceiptMerchant = { name, settings: merchant.settings };
  const subject = subjectOf(entry, name);
  const message: ReceiptMessage = {
    from: { email: fromAddress, name },
    to: entry.to,
    subject,
    text: textPart(entry, clean, subject),
    html: htmlPart(entry, clean, subject),
    headers: {
      // The Email Service sets Message-ID itself (docs/receipts.md, "Sent once"): the receipt's own
      // identity travels here, and every copy of one receipt names the same References.
      'X-Receipt-Id': entry.id,
      References: messageIdentity(entry, fromAddress),
      'Auto-Submitted': 'auto-generated',
    },
  };
  if (merchant.settings.support_email !== null) message.replyTo = merchant.settings.support_email;
  // Bounded by the inputs (a description of 100 characters, settings of at most 1,000, one
  // recipient, three headers of ids): a few KB against the Email Service's limits, checked anyway.
  const encoder = new TextEncoder();
  const bytes = encoder.encode(message.subject + message.text + message.html).length;
  if (bytes > EMAIL_SERVICE.messageBytes * HALF) throw new Error(`receipt ${entry.id} is ${bytes} bytes, over half the Email Service's message size`);
  const headers = Object.entries(message.headers).map(([name, value]) => ({ name, bytes: encoder.encode(value).length }));
  const headerBytes = headers.reduce((sum, h) => sum + h.name.length + h.bytes + 4, 0);
  if (headerBytes > EMAIL_SERVICE.customHeaderBytes * HALF || headers.some((h) => h.bytes > EMAIL_SERVICE.headerValueBytes * HALF)) {
    throw new Error(`receipt ${entry.id} has headers over half the Email Service's limits`);
  }
  return message;
}
