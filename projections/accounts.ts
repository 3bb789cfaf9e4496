import type { Queryable } from '../src/db/database.ts';
import type { Projection } from './projection.ts';

export const accountsProjection: Projection = {
  name: 'accounts',
  tables: ['accounts'],
  handles: ['AccountCreated', 'WebhookSecretRotated', 'AccountDefaultModelChosen'],
  apply: `
begin
  case e.type
  when 'AccountCreated' then
    insert into accounts (account_id, name, created_at)
    values ((e.data->>'accountId')::uuid, e.data->>'name', (e.data->>'createdAt')::timestamptz);
  when 'WebhookSecretRotated' then
    update accounts set secret_rotated_at = (e.data->>'rotatedAt')::timestamptz
    where account_id = substring(e.stream_id from 9)::uuid;
  when 'AccountDefaultModelChosen' then
    update accounts set default_model = e.data->>'model', default_model_chosen_at = (e.data->>'chosenAt')::timestamptz
    where account_id = substring(e.stream_id from 9)::uuid;
  end case;
end`,
};

// Reads of this read model: account names for the `hwr` commands, the first start, and the
// account's default model for submissions and the models pages.

export async function findAccountIdByName(db: Queryable, name: string): Promise<string | undefined> {
  const result = await db.query<{ account_id: string }>('select account_id from accounts where name = $1', [name]);
  return result.rows[0]?.account_id;
}

export async function countAccounts(db: Queryable): Promise<number> {
  const result = await db.query<{ n: string }>('select count(*) as n from accounts');
  return Number(result.rows[0].n);
}

export interface AccountDefaultModelRow {
  /** `default` or a model id, as chosen. */
  default_model: string;
  default_model_chosen_at: Date | null;
}

/** The account's chosen default model; undefined for no such account. */
export async function readAccountDefaultModel(db: Queryable, accountId: string): Promise<AccountDefaultModelRow | undefined> {
  const result = await db.query<AccountDefaultModelRow>(
    'select default_model, default_model_chosen_at from accounts where account_id = $1',
    [accountId],
  );
  return result.rows[0];
}
