-- The account's default model (docs/models.md, "The account's default model"): the model a
-- submission that names none reads with, from AccountDefaultModelChosen on the account's stream
-- (the accounts projection, projections/accounts.ts). `default`: the shipped recognizer, as for
-- every account before the choice existed.
alter table accounts
  add column default_model text not null default 'default',
  add column default_model_chosen_at timestamptz;
