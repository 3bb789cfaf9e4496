import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alignCodePoints, editDistance, editRatio } from '../../src/recognition/correction/edit-distance.ts';
import { checkAnswer, checkLineEdit, normalizeLineText } from '../../src/recognition/correction/guards.ts';

const IDS = ['r1l1', 'r1l2', 'r1l3'];
const stop = (text: string | null) => ({ text, finishReason: 'STOP' });

test('edit distance counts code points, not UTF-16 units', () => {
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(editDistance('same', 'same'), 0);
  assert.equal(editDistance('𝔄b', '𝔅b'), 1);
  // NFC: a precomposed é equals e + combining acute.
  assert.equal(editDistance('caf\u00e9', 'cafe\u0301'), 0);
  assert.equal(editRatio('tbe', 'the'), 1 / 3);
  assert.equal(editRatio('', ''), 0);
});

test('alignment maps each target character to its source character, -1 for insertions', () => {
  assert.deepEqual(alignCodePoints([...'brownfox'], [...'brown fox']), [0, 1, 2, 3, 4, -1, 5, 6, 7]);
  assert.deepEqual(alignCodePoints([...'to gether'], [...'together']), [0, 1, 3, 4, 5, 6, 7, 8]);
});

test('a well-formed answer naming every line once is accepted, fenced or bare', () => {
  const lines = IDS.map((id) => ({ id, text: `text of ${id}` }));
  for (const text of [JSON.stringify({ lines }), `\`\`\`json\n${JSON.stringify({ lines })}\n\`\`\``, JSON.stringify(lines)]) {
    const check = checkAnswer(stop(text), IDS);
    assert.ok(check.ok, text);
    assert.equal(check.texts.get('r1l2'), 'text of r1l2');
  }
});

test('dropped, repeated and added lines refuse the whole answer', () => {
  const dropped = checkAnswer(
    stop(
      JSON.stringify({
        lines: [
          { id: 'r1l1', text: 'a' },
          { id: 'r1l3', text: 'c' },
        ],
      }),
    ),
    IDS,
  );
  assert.deepEqual(dropped, { ok: false, problem: 'the answer dropped line r1l2' });
  const repeated = checkAnswer(
    stop(
      JSON.stringify({
        lines: [
          { id: 'r1l1', text: 'a' },
          { id: 'r1l2', text: 'b' },
          { id: 'r1l2', text: 'b2' },
          { id: 'r1l3', text: 'c' },
        ],
      }),
    ),
    IDS,
  );
  assert.deepEqual(repeated, { ok: false, problem: 'the answer repeated line r1l2' });
  const added = checkAnswer(stop(JSON.stringify({ lines: [...IDS.map((id) => ({ id, text: id })), { id: 'r1l4', text: 'new' }] })), IDS);
  assert.deepEqual(added, { ok: false, problem: 'the answer added unknown line r1l4' });
});

test('malformed answers say what is wrong', () => {
  const problem = (answer: { text: string | null; finishReason: string | null }) => {
    const check = checkAnswer(answer, IDS);
    assert.equal(check.ok, false);
    return check.ok ? '' : check.problem;
  };
  assert.equal(problem(stop('Here are the lines: ...')), 'the answer is not valid JSON');
  assert.equal(problem(stop('{"lines": [{"id": "r1l1", "text": "trunc')), 'the answer is not valid JSON');
  assert.equal(problem({ text: '{"lines": [', finishReason: 'MAX_TOKENS' }), 'the answer was cut off at the output token limit');
  assert.equal(problem({ text: '{"lines": [', finishReason: 'length' }), 'the answer was cut off at the output token limit');
  assert.equal(problem({ text: null, finishReason: 'SAFETY' }), 'the model returned no text (finish reason SAFETY)');
  assert.equal(problem(stop('{"corrections": []}')), 'the answer has no "lines" array');
  assert.equal(
    problem(stop('{"lines": [{"id": "r1l1", "text": 3}]}')),
    'a line of the answer is not an object with string "id" and "text"',
  );
  assert.equal(problem(stop('{"lines": ["r1l1"]}')), 'a line of the answer is not an object with string "id" and "text"');
});

test('a line edit over the ratio bound is refused; one character is always allowed', () => {
  assert.deepEqual(checkLineEdit('Stapf will complicatc my work', 'Stapf will complicate my work', 0.3), { accept: true });
  assert.deepEqual(checkLineEdit('tbe', 'the', 0.3), { accept: true });
  assert.deepEqual(checkLineEdit('as well as with those of', 'and likewise with those of the Cape', 0.3), {
    accept: false,
    reason: 'edit ratio 0.51 over 0.3',
  });
  assert.deepEqual(checkLineEdit('ab', 'xy', 0.3), { accept: false, reason: 'edit ratio 1.00 over 0.3' });
  assert.deepEqual(checkLineEdit('ab', 'xy', 1), { accept: true });
});

test('line texts are compared NFC with whitespace collapsed', () => {
  assert.equal(normalizeLineText('  to  hard\tblows \n'), 'to hard blows');
  assert.equal(normalizeLineText('cafe\u0301'), 'caf\u00e9');
});
