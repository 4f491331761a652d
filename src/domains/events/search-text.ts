/**
 * Search words (docs/decisions.md §16.1, §16.5): a text is split on anything
 * that is not a letter or digit, lower-cased and stripped of accents, so
 * `elec` is a prefix of "Élection" and `trump 2028` finds "Will Trump win in
 * 2028?". The same function normalises the stored texts (the catalogue write)
 * and every `q`, in this process, so PostgreSQL and PGlite index and match
 * the very same words whatever their collation, locale or extensions: the
 * database only holds them as 'simple' tsvectors and matches prefixes.
 */

/** Letters that carry no combining mark to strip (NFKD leaves them whole). */
const FOLD: Readonly<Record<string, string>> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  đ: 'd',
  ð: 'd',
  ł: 'l',
  þ: 'th',
  ı: 'i',
  ħ: 'h',
  ŧ: 't',
};
const FOLDABLE = new RegExp(`[${Object.keys(FOLD).join('')}]`, 'gu');

/** Longest word kept: far above a 100-character query, far below the 2 KB PostgreSQL keeps in a tsvector. */
const MAX_WORD = 200;

/** The words of a text: letters and digits only, lower case, without accents. */
export function searchWords(text: string): string[] {
  const folded = text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(FOLDABLE, (c) => FOLD[c]);
  return folded
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0)
    .map((w) => (w.length > MAX_WORD ? [...w].slice(0, MAX_WORD).join('') : w));
}

/** A text as the words it is searched by, space-separated (what the tsvectors are built from). */
export function searchText(...texts: string[]): string {
  return texts.flatMap(searchWords).join(' ');
}

/**
 * `to_tsquery('simple', …)` input for `q`: every word must be a prefix of
 * some stored word (`w1:* & w2:*`); undefined when `q` has no letter or
 * digit (it matches nothing). Words are letters and digits only, so nothing
 * needs escaping.
 */
export function prefixQuery(q: string): string | undefined {
  const words = [...new Set(searchWords(q))];
  return words.length === 0 ? undefined : words.map((w) => `${w}:*`).join(' & ');
}
