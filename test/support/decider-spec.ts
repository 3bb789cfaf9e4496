// Given events, when a command, then these events (or this rejection): the shape of a decider
// test, after Emmett's DeciderSpecification. The state is folded from the given events with the
// decider's own evolve, so a test says only facts and a command.
import assert from 'node:assert/strict';
import { Rejection, type RejectionCode } from '../../domain/rejections.ts';

export interface Decider<State, Command, Event> {
  decide(state: State, command: Command): Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

export interface DeciderThen<State, Event> {
  /** The command decides exactly these events (deep equality, in order). */
  then(expected: Event[]): State;
  /** The command decides nothing: it repeats what already happened. */
  thenNothing(): void;
  thenRejects(code: RejectionCode): void;
  /** The command's events, for assertions on some of their fields. */
  events(): Event[];
}

export function deciderSpec<State, Command, Event>(decider: Decider<State, Command, Event>) {
  return {
    given(events: Event[] = []) {
      const state = events.reduce(decider.evolve, decider.initialState());
      return {
        state,
        when(command: Command): DeciderThen<State, Event> {
          return {
            then(expected) {
              const decided = decider.decide(state, command);
              assert.deepEqual(decided, expected);
              return decided.reduce(decider.evolve, state);
            },
            thenNothing() {
              assert.deepEqual(decider.decide(state, command), []);
            },
            thenRejects(code) {
              assert.throws(
                () => decider.decide(state, command),
                (error: unknown) => error instanceof Rejection && error.code === code,
                `expected the rejection ${code}`,
              );
            },
            events: () => decider.decide(state, command),
          };
        },
      };
    },
  };
}
