import type { Projection } from './projection.ts';

export const accountsProjection: Projection = {
  name: 'accounts',
  tables: ['accounts'],
  handles: ['AccountCreated', 'WebhookSecretRotated'],
  apply: `
begin
  case e.type
  when 'AccountCreated' then
    insert into accounts (account_id, name, created_at)
    values ((e.data->>'accountId')::uuid, e.data->>'name', (e.data->>'createdAt')::timestamptz);
  when 'WebhookSecretRotated' then
    update accounts set secret_rotated_at = (e.data->>'rotatedAt')::timestamptz
    where account_id = substring(e.stream_id from 9)::uuid;
  end case;
end`,
};
