import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkEntryPath, isDirectoryPath, isJunkPath } from '../../src/shared/entry-path.ts';

test('ordinary relative paths are safe and keep their form', () => {
  for (const name of ['1.jpg', 'scans/1.jpg', 'a/b/c/page 10.tif', './1.jpg', 'a//b.jpg', '..hidden.jpg', 'x..y/1.jpg']) {
    assert.deepEqual(checkEntryPath(name), { safe: true, path: name }, name);
  }
});

test('backslashes count as separators', () => {
  assert.deepEqual(checkEntryPath('scans\\1.jpg'), { safe: true, path: 'scans/1.jpg' });
});

test('absolute paths are refused', () => {
  for (const name of ['/etc/passwd', '/tmp/evil.jpg', '\\evil.jpg', '\\\\server\\share\\evil.jpg', '//server/share/evil.jpg']) {
    const result = checkEntryPath(name);
    assert.equal(result.safe, false, name);
    assert.match(!result.safe ? result.reason : '', /absolute/, name);
  }
});

test('drive letters are refused', () => {
  for (const name of ['C:\\Windows\\evil.jpg', 'c:/evil.jpg', 'D:evil.jpg']) {
    const result = checkEntryPath(name);
    assert.equal(result.safe, false, name);
    assert.match(!result.safe ? result.reason : '', /drive letter/, name);
  }
});

test('climbing paths are refused, whatever the separator', () => {
  for (const name of ['../evil.jpg', 'scans/../../evil.jpg', '..\\..\\evil.jpg', 'a\\..\\..\\b.jpg', '..', 'a/..']) {
    const result = checkEntryPath(name);
    assert.equal(result.safe, false, name);
    assert.match(!result.safe ? result.reason : '', /climbs out/, name);
  }
});

test('an empty name is refused', () => {
  assert.equal(checkEntryPath('').safe, false);
});

test('OS junk is recognised anywhere in the tree', () => {
  for (const path of [
    '__MACOSX/._1.jpg',
    '__MACOSX/scans/._1.jpg',
    'scans/__MACOSX/x.jpg',
    '__MACOSX/',
    '.DS_Store',
    'scans/.DS_Store',
    'scans/._1.jpg',
    'Thumbs.db',
    'scans/thumbs.db',
    'desktop.ini',
    'scans/Desktop.ini',
    '.Spotlight-V100/Store-V2/x',
    '$RECYCLE.BIN/S-1-5/x.jpg',
    'photos/Icon\r',
  ]) {
    assert.equal(isJunkPath(path), true, path);
  }
});

test('pages are not junk', () => {
  for (const path of ['1.jpg', 'scans/1.jpg', 'MACOSX/1.jpg', 'thumbs.jpg', 'desktop.ini.jpg', 'my.DS_Store.jpg', '_1.jpg']) {
    assert.equal(isJunkPath(path), false, path);
  }
});

test('directories end with a slash', () => {
  assert.equal(isDirectoryPath('scans/'), true);
  assert.equal(isDirectoryPath('scans/1.jpg'), false);
});

test('paths longer or deeper than any scan needs are refused (they only slowed every later step)', () => {
  const long = `${'a'.repeat(1100)}.jpg`;
  const tooLong = checkEntryPath(long);
  assert.equal(tooLong.safe, false);
  assert.match(!tooLong.safe ? tooLong.reason : '', /is 1104 characters long; at most 1024/);
  const deep = `${'1/'.repeat(65)}page.jpg`;
  const tooDeep = checkEntryPath(deep);
  assert.equal(tooDeep.safe, false);
  assert.match(!tooDeep.safe ? tooDeep.reason : '', /is 65 folders deep; at most 64/);
  assert.equal(checkEntryPath(`${'1/'.repeat(64)}page.jpg`).safe, true, '64 folders are accepted');
});
