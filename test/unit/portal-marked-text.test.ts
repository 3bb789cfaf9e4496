// The search's marked text as the portal shows it (src/portal/html.ts, markedText): only the
// search's own <mark> and </mark> become markup; everything else is text, whatever the string holds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { markedText } from '../../src/portal/html.ts';
import { highlightText, searchMatcher } from '../../src/use-cases/search.ts';

test('the matched words become <mark class="hit">, the rest is escaped text', () => {
  const highlight = highlightText('Bonnemort a remblayé <b>après</b> & "avoir"', searchMatcher('remblaye', 0));
  assert.equal(
    markedText(highlight).value,
    'Bonnemort a <mark class="hit">remblayé</mark> &#60;b&#62;après&#60;/b&#62; &#38; &#34;avoir&#34;',
  );
});

test('markup that is not a mark, raw or escaped, stays text; an unclosed mark ends with the string', () => {
  assert.equal(markedText('<img src=x onerror=alert(1)>').value, '&#60;img src&#61;x onerror&#61;alert(1)&#62;');
  assert.equal(markedText('&lt;script&gt;&amp;lt;').value, '&#60;script&#62;&#38;lt;');
  assert.equal(markedText('<mark>a<mark class="x">b').value, '<mark class="hit">a&#60;mark class&#61;&#34;x&#34;&#62;b</mark>');
});

test('the matcher: diacritics, case and punctuation aside; close spellings only with fuzzy', () => {
  const exact = searchMatcher('Remblaye "apres"', 0);
  assert.ok(exact('remblayé,') && exact('APRÈS') && !exact('remblay'));
  assert.ok(!searchMatcher('imperturbible', 0)('imperturbable.'));
  assert.ok(searchMatcher('imperturbible', 1)('imperturbable.'));
});
