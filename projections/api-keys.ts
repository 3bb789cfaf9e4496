import type { Projection } from './projection.ts';

// Authentication: key hash → account, and whether the key is revoked.
export const apiKeysProjection: Projection = {
  name: 'api_keys',
  tables: ['api_keys'],
  handles: ['ApiKeyCreated', 'ApiKeyRevoked'],
  apply: `
begin
  case e.type
  when 'ApiKeyCreated' then
    insert into api_keys (key_id, account_id, label, prefix, key_hash, created_at)
    values ((e.data->>'keyId')::uuid, substring(e.stream_id from 9)::uuid, e.data->>'label', e.data->>'prefix',
      e.data->>'keyHash', (e.data->>'createdAt')::timestamptz);
  when 'ApiKeyRevoked' then
    update api_keys set revoked_at = (e.data->>'revokedAt')::timestamptz where key_id = (e.data->>'keyId')::uuid;
  end case;
end`,
};
