// Checks the relative links of the Markdown docs: every `[text](path)` and `[text](path#anchor)` in
// README.md, CONTRIBUTING.md, docs/*.md and chaos/README.md must name a file or folder of the
// repository, and every #anchor a heading of the target page, spelt as GitHub spells it (lower
// case, punctuation dropped, spaces to hyphens, "-1", "-2"… for repeated headings). Links to other
// sites are not fetched. Run by `npm run lint`; `node scripts/check-links.mjs` alone.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  'chaos/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Markdown without fenced code blocks and inline code spans, where a `[x](y)` is not a link. */
function prose(markdown) {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[^`\n]*?\1/g, '');
}

/** GitHub's anchor for a heading's text (github-slugger): the rendered text, lower case, punctuation dropped. */
function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image shows its text
    .replace(/<[^>]+>/g, '') // inline HTML
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

const anchorCache = new Map();
/** The anchors a page offers: its headings' slugs (repeats numbered) and explicit `id`/`name` attributes. */
function anchorsOf(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const markdown = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  const anchors = new Set();
  const seen = new Map();
  for (const [, heading] of markdown.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id);
  anchorCache.set(file, anchors);
  return anchors;
}

const broken = [];
for (const page of pages) {
  const file = join(root, page);
  if (!existsSync(file)) continue;
  const text = prose(readFileSync(file, 'utf8'));
  const targets = [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]),
  ];
  for (const target of targets) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …: not checked here
    const [path, anchor] = target.split('#', 2);
    const destination = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
    const where = `${page}: ${target}`;
    if (!existsSync(destination)) {
      broken.push(`${where}  (no file ${relative(root, destination)})`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (statSync(destination).isDirectory() || !destination.endsWith('.md')) {
      broken.push(`${where}  (an anchor into ${relative(root, destination)}, which has no headings)`);
    } else if (!anchorsOf(destination).has(decodeURIComponent(anchor))) {
      broken.push(`${where}  (no heading #${anchor} in ${relative(root, destination)})`);
    }
  }
}

if (broken.length) {
  console.error(`Broken links (${broken.length}):\n  ${broken.join('\n  ')}`);
  process.exit(1);
}
console.log(`Links: every relative link and #anchor of ${pages.length} pages resolves.`);
