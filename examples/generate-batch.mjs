#!/usr/bin/env node
// Writes a batch CSV of N card sales (test card 4111111111111111) to stdout, for load tries:
//   node examples/generate-batch.mjs 100000 > /tmp/batch-100k.csv
// With --receipts every row asks for an email receipt (email_receipt true, its own address):
//   node examples/generate-batch.mjs 100 --receipts > /tmp/receipts-100.csv
const rows = Number(process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? 1000);
const receipts = process.argv.includes('--receipts');
const out = [];
out.push(`"transaction_type","amount","cc_number","cc_expiration","cc_cvc","order_id","billing_first_name","billing_last_name","billing_postal_code"${receipts ? ',"email_receipt","email_address"' : ''}\n`);
for (let i = 1; i <= rows; i++) {
  const receipt = receipts ? `,"true","customer${i}@example.com"` : '';
  out.push(`"sale","${100 + (i % 9900)}","4111111111111111","12/30","123","ord${i}","First${i % 97}","Last${i % 89}","${String(10000 + (i % 89999))}"${receipt}\n`);
  if (out.length >= 10000) process.stdout.write(out.splice(0).join(''));
}
process.stdout.write(out.join(''));
