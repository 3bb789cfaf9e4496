-- A sign-in attempt is recorded (as failed) before it is counted and the password checked, and
-- turned into a success afterwards when the password was right: it needs an id to be found again.
alter table portal_sign_in_attempts add column id bigint generated always as identity primary key;
