/**
 * Recurring billing's requests and answers, in FluidPay's shapes: add-ons and discounts (an amount
 * in cents or a percentage in thousandths of a percent, and how many billings they last), plans,
 * and subscriptions of a vault customer (docs/recurring.md).
 */
import { z } from 'zod';
import { containsCardNumber } from '../lib/card-number';
import { timestampSchema } from './envelope';
import { customerIdField, paymentMethodIdField } from './vault';

const NO_CARD_NUMBER = 'must not contain a card number';
export const RECURRING_ID_PATTERN = /^[A-Za-z0-9._^-]{1,64}$/;
export const recurringIdField = z
  .string()
  .regex(RECURRING_ID_PATTERN, 'must be 1 to 64 letters, digits, ".", "-", "_" or "^"')
  .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);
export const recurringParamSchema = z.object({ id: recurringIdField });

const text = (max: number) =>
  z
    .string('must be a string')
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !containsCardNumber(value), NO_CARD_NUMBER);
const cents = z.int('must be an integer number of cents').min(0, 'must be 0 or more').max(99_999_999, 'must be at most 99999999');
/** Thousandths of a percent: 43440 is 43.440%; at most 100%. */
const percentage = z.int('must be an integer (thousandths of a percent)').min(0, 'must be 0 or more').max(100_000, 'must be at most 100000 (100%)');
const duration = z.int('must be an integer').min(0, 'must be 0 (until cancelled) or more').max(10_000, 'must be at most 10000');
/** Every N months (or days); FluidPay's SDK always sends the field, 0 when unset: 0 means 1. */
const interval = z.int('must be an integer').min(0, 'must be 0 (taken as 1) or more').max(365, 'must be at most 365');
export const billingFrequencyField = z.enum(['monthly', 'twice_monthly', 'daily'], 'must be monthly, twice_monthly or daily');
const billingDays = z.string('must be a string such as "1", "1,15" or "0"').max(8, 'must be at most 8 characters');
const billDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date, YYYY-MM-DD');

/** Exactly one of amount and percentage, above zero (FluidPay's rule: never both). */
function oneAmount(body: { amount?: number | undefined; percentage?: number | undefined }, ctx: z.RefinementCtx, required: boolean): void {
  const amount = body.amount ?? 0;
  const percent = body.percentage ?? 0;
  if (amount > 0 && percent > 0) ctx.addIssue({ code: 'custom', path: ['percentage'], message: 'give amount or percentage, never both' });
  else if (required && amount === 0 && percent === 0) ctx.addIssue({ code: 'custom', path: ['amount'], message: 'give amount (cents) or percentage (thousandths of a percent), above 0' });
}

export const adjustmentBodySchema = z
  .strictObject({
    name: text(100).min(1, 'is required'),
    description: text(255).optional(),
    amount: cents.optional(),
    percentage: percentage.optional(),
    duration: duration.default(0).meta({ description: 'How many billings it applies to; 0: until cancelled.' }),
  })
  .superRefine((body, ctx) => oneAmount(body, ctx, true))
  .meta({ id: 'RecurringAdjustmentRequest', description: 'An add-on or a discount: an amount in cents or a percentage in thousandths of a percent (43440 = 43.440%), never both.' });
export type AdjustmentBody = z.infer<typeof adjustmentBodySchema>;

/** A plan's or subscription's reference to an add-on or discount; the other fields override the referenced one's. */
export const adjustmentRefSchema = z
  .strictObject({
    id: recurringIdField,
    name: text(100).optional(),
    description: text(255).optional(),
    amount: cents.optional(),
    percentage: percentage.optional(),
    duration: duration.optional(),
  })
  .superRefine((body, ctx) => oneAmount(body, ctx, false));
export type AdjustmentRef = z.infer<typeof adjustmentRefSchema>;
const adjustmentRefs = z.array(adjustmentRefSchema).max(20, 'at most 20');

export const adjustmentViewSchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    amount: z.int(),
    percentage: z.int(),
    duration: z.int(),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({ id: 'RecurringAdjustment' });
export type AdjustmentView = z.infer<typeof adjustmentViewSchema>;

/** An add-on or discount as a plan or subscription applies it (overrides merged in). */
export const appliedAdjustmentSchema = z
  .strictObject({ id: z.string(), name: z.string(), description: z.string(), amount: z.int(), percentage: z.int(), duration: z.int() })
  .meta({ id: 'RecurringAppliedAdjustment' });
export type AppliedAdjustment = z.infer<typeof appliedAdjustmentSchema>;

export const planBodySchema = z
  .strictObject({
    name: text(100).min(1, 'is required'),
    description: text(255).optional(),
    amount: cents,
    billing_cycle_interval: interval.default(1),
    billing_frequency: billingFrequencyField,
    billing_days: billingDays.default('1'),
    charge_on_day: z.boolean('must be true or false').optional(),
    duration: duration.default(0),
    add_ons: adjustmentRefs.optional(),
    discounts: adjustmentRefs.optional(),
  })
  .meta({ id: 'RecurringPlanRequest' });
export type PlanBody = z.infer<typeof planBodySchema>;

export const planViewSchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    amount: z.int(),
    billing_cycle_interval: z.int(),
    billing_frequency: billingFrequencyField,
    billing_days: z.string(),
    charge_on_day: z.boolean(),
    total_add_ons: z.int().meta({ description: 'What the add-ons add to one billing of the plan amount, in cents.' }),
    total_discounts: z.int().meta({ description: 'What the discounts take off one billing, in cents.' }),
    duration: z.int(),
    add_ons: z.array(appliedAdjustmentSchema),
    discounts: z.array(appliedAdjustmentSchema),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({ id: 'RecurringPlan' });
export type PlanView = z.infer<typeof planViewSchema>;

const subscriptionCustomerSchema = z.strictObject({
  id: customerIdField,
  payment_method_type: z.enum(['card', 'ach'], 'must be card or ach').optional(),
  payment_method_id: paymentMethodIdField.optional().meta({ description: "The customer's payment method to charge (default: the customer's default)." }),
  billing_address_id: paymentMethodIdField.optional(),
  shipping_address_id: paymentMethodIdField.optional(),
});

const subscriptionFields = {
  plan_id: recurringIdField.optional(),
  description: text(255).optional(),
  amount: cents.optional(),
  billing_cycle_interval: interval.optional(),
  billing_frequency: billingFrequencyField.optional(),
  billing_days: billingDays.optional(),
  charge_on_day: z.boolean('must be true or false').optional(),
  duration: duration.optional(),
  next_bill_date: billDate.optional().meta({ description: 'The first (or, on update, the next) bill date, a UTC day.' }),
  add_ons: adjustmentRefs.optional(),
  discounts: adjustmentRefs.optional(),
  po_number: text(17).optional(),
  tax_amount: cents.optional(),
  tax_exempt: z.boolean('must be true or false').optional(),
};

export const subscriptionCreateSchema = z
  .strictObject({ ...subscriptionFields, customer: subscriptionCustomerSchema })
  .meta({ id: 'RecurringSubscriptionRequest', description: "A subscription's own billing fields override its plan's." });
export type SubscriptionCreate = z.infer<typeof subscriptionCreateSchema>;

/** FluidPay's SDK sends `customer` on every update, with an empty id when it is not to change. */
const subscriptionCustomerUpdateSchema = subscriptionCustomerSchema.extend({ id: customerIdField.or(z.literal('')) });

export const subscriptionUpdateSchema = z
  .strictObject({ ...subscriptionFields, customer: subscriptionCustomerUpdateSchema.optional() })
  .meta({ id: 'RecurringSubscriptionUpdate' });
export type SubscriptionUpdate = z.infer<typeof subscriptionUpdateSchema>;

export const SUBSCRIPTION_STATUSES = ['active', 'failing', 'failed', 'error', 'completed', 'paused', 'past_due', 'cancelled', 'stopped'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const lastDeclineSchema = z
  .strictObject({
    transaction_id: z.string(),
    date: z.string().meta({ description: 'The UTC day of the declined attempt.' }),
    response_code: z.int().nullable(),
    processor_response_code: z.string().nullable(),
    processor_response_text: z.string().nullable(),
    never_retry: z.boolean().meta({ description: 'The networks forbid retrying this decline (Visa category 1, Mastercard "do not try again").' }),
  })
  .meta({ id: 'RecurringDecline' });
export type LastDecline = z.infer<typeof lastDeclineSchema>;

export const subscriptionViewSchema = z
  .strictObject({
    id: z.string(),
    plan_id: z.string(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    description: z.string(),
    customer: z.strictObject({
      id: z.string(),
      payment_method_type: z.enum(['card', 'ach']),
      payment_method_id: z.string(),
      billing_address_id: z.string(),
      shipping_address_id: z.string(),
    }),
    amount: z.int(),
    total_adds: z.int(),
    total_discounts: z.int(),
    billing_cycle_interval: z.int(),
    billing_frequency: billingFrequencyField,
    billing_days: z.string(),
    charge_on_day: z.boolean(),
    duration: z.int(),
    next_bill_date: z.string().meta({ description: 'YYYY-MM-DD (a UTC day); empty once the subscription ended.' }),
    add_ons: z.array(appliedAdjustmentSchema),
    discounts: z.array(appliedAdjustmentSchema),
    po_number: z.string(),
    tax_amount: z.int(),
    tax_exempt: z.boolean(),
    billings: z.int().meta({ description: 'How many cycles were charged (approved).' }),
    retries: z.int().meta({ description: "Declined attempts of the cycle being billed (failing: retried on the schedule in docs/recurring.md)." }),
    last_transaction_id: z.string().nullable(),
    last_decline: lastDeclineSchema.nullable(),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .meta({ id: 'RecurringSubscription' });
export type SubscriptionView = z.infer<typeof subscriptionViewSchema>;

const stringQuery = z.strictObject({ operator: z.enum(['=', '!='], 'must be = or !='), value: z.string('must be a string').max(255, 'must be at most 255 characters') });
const dateRange = z.strictObject({
  start_date: z.iso.datetime({ message: 'must be an RFC 3339 timestamp', offset: true }).or(billDate).optional(),
  end_date: z.iso.datetime({ message: 'must be an RFC 3339 timestamp', offset: true }).or(billDate).optional(),
});

export const subscriptionSearchSchema = z
  .strictObject({
    plan_id: stringQuery.optional(),
    customer: z.strictObject({ id: stringQuery.optional() }).optional(),
    status: stringQuery.optional(),
    next_bill_date: dateRange.optional(),
    expiration_date: dateRange.optional().meta({ description: 'Accepted; subscriptions here do not expire by date (a duration ends them), so it matches none when given a range.' }),
    limit: z.int('must be an integer').min(1, 'must be 1 or more').max(100, 'must be at most 100').default(10),
    offset: z.int('must be an integer').min(0, 'must be 0 or more').max(100_000, 'must be at most 100000').default(0),
  })
  .meta({ id: 'RecurringSubscriptionSearch' });
export type SubscriptionSearch = z.infer<typeof subscriptionSearchSchema>;

export const statusParamSchema = z.object({
  id: recurringIdField,
  status: z.enum(['active', 'paused', 'past_due', 'cancelled', 'completed'], 'must be active, paused, past_due, cancelled or completed'),
});
export const statusQuerySchema = z.object({ next_bill_date: billDate.optional() });

export const billBodySchema = z.strictObject({ date: billDate.optional().meta({ description: 'Bill what is due on or before this UTC day (default: today).' }) });
export const billResultSchema = z
  .strictObject({
    date: z.string(),
    charged: z.int(),
    declined: z.int(),
    skipped: z.int().meta({ description: 'Due, but not charged now: refused before the processor, or billed by another run.' }),
    completed: z.int(),
    finished: z.boolean().meta({ description: 'False when the step budget ran out: the rest is billed by the next step (the hourly run goes on).' }),
  })
  .meta({ id: 'RecurringBillResult' });
export type BillResult = z.infer<typeof billResultSchema>;

function listSchema<Item extends z.ZodType>(item: Item, id: string) {
  return z.strictObject({ status: z.literal('success'), msg: z.literal('success'), data: z.array(item), total_count: z.int().min(0) }).meta({ id });
}
export const adjustmentListSchema = listSchema(adjustmentViewSchema, 'RecurringAdjustmentList');
export const planListSchema = listSchema(planViewSchema, 'RecurringPlanList');
export const subscriptionListSchema = listSchema(subscriptionViewSchema, 'RecurringSubscriptionList');
