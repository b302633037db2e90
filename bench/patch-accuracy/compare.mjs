// compare.mjs CORPUS RELAY DIFF_APPLY_BUNDLE: the side-by-side run of run.sh.
import { readFileSync, readdirSync, existsSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';

const [corpus, relay, bundle] = process.argv.slice(2);
const da = await import(pathToFileURL(resolve(bundle)).href);

// diff-apply reports its fallbacks with console.log; keep stdout for the table.
const quiet = { log: console.log, warn: console.warn };
function hush() { console.log = () => {}; console.warn = () => {}; }
function unhush() { console.log = quiet.log; console.warn = quiet.warn; }

// What relaycode 1.0 (relaycoder/relaycode src/core/executor.ts) called for each strategy.
async function diffApply(strategy, original, body) {
  switch (strategy) {
    case 'new-unified':
      return await da.newUnifiedDiffStrategyService.newUnifiedDiffStrategyService.create(0.95).applyDiff({ originalContent: original, diffContent: body });
    case 'multi-search-replace':
    case 'search-replace':
      return da.multiSearchReplaceService.multiSearchReplaceService.applyDiff({ originalContent: original, diffContent: body });
    case 'unified':
    case 'standard-diff':
      return da.unifiedDiffService.unifiedDiffService.applyDiff(original, body);
  }
  return { success: false, error: `unknown strategy ${strategy}` };
}

function relayApply(strategy, original, body, tmp) {
  const file = join(tmp, 'file');
  const patch = join(tmp, 'patch');
  writeFileSync(file, original);
  writeFileSync(patch, body);
  const r = spawnSync(relay, ['patch', '--json', '--strategy', strategy, file, patch], { encoding: 'utf8', maxBuffer: 64 << 20 });
  let out;
  try { out = JSON.parse(r.stdout); } catch { return { success: false, error: `relay exited ${r.status}: ${r.stderr.trim()}` }; }
  return out.ok ? { success: true, content: out.content } : { success: false, error: out.error };
}

// What the file holds afterwards, against the committed file: a refused patch
// leaves the original, which is exact when the user kept the original (an
// answer they undid).
function classify(res, expected, input) {
  if (!res.success) return input === expected ? 'exact' : 'refused';
  return res.content === expected ? 'exact' : 'different';
}

function firstDiff(got, want) {
  const g = got.split('\n'), w = want.split('\n');
  for (let i = 0; i < Math.max(g.length, w.length); i++) {
    if (g[i] !== w[i]) return `line ${i + 1}: got ${JSON.stringify(g[i] ?? null)}, want ${JSON.stringify(w[i] ?? null)}`;
  }
  return '';
}

const outcomes = ['exact', 'different', 'refused'];
const table = {};
for (const r of outcomes) for (const s of outcomes) table[r + '/' + s] = 0;
const worse = [];
const byFormat = {};
let n = 0, relayExact = 0, shippedExact = 0, liveChecked = 0, byRefusal = 0;
const metaDisagree = [];
const tmp = mkdtempSync(join(tmpdir(), 'patch-accuracy-'));
try {
  for (const repo of readdirSync(corpus).sort()) {
    const rdir = join(corpus, repo);
    if (!existsSync(rdir) || repo.endsWith('.md')) continue;
    for (const c of readdirSync(rdir).sort()) {
      const dir = join(rdir, c);
      if (!existsSync(join(dir, 'meta.json'))) continue;
      const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
      const input = readFileSync(join(dir, 'input'), 'utf8');
      const expected = readFileSync(join(dir, 'expected'), 'utf8');
      const patches = readdirSync(dir).map(f => f.match(/^patch\.(\d+)\.(.+)$/)).filter(Boolean)
        .sort((a, b) => Number(a[1]) - Number(b[1])).map(m => ({ strategy: m[2], body: readFileSync(join(dir, m[0]), 'utf8') }));
      // relaycoder's repositories shipped diff-apply; nocapro's shipped apply-multi-diff (unpublished).
      const live = String(meta.source || '').startsWith('relaycoder/');
      let shipped = meta.shipped_engine;
      if (live) {
        let content = input, res = { success: true, content };
        for (const p of patches) {
          hush();
          try { res = await diffApply(p.strategy, content, p.body); } catch (e) { res = { success: false, error: String(e) }; } finally { unhush(); }
          if (!res.success) break;
          content = res.content;
        }
        shipped = classify(res, expected, input);
        liveChecked++;
        if (shipped !== meta.shipped_engine) metaDisagree.push(`${repo}/${c}: diff-apply ${shipped}, meta.json ${meta.shipped_engine}`);
      }
      let content = input, res = { success: true, content };
      for (const p of patches) {
        res = relayApply(p.strategy, content, p.body, tmp);
        if (!res.success) break;
        content = res.content;
      }
      const got = classify(res, expected, input);
      if (got === 'exact' && !res.success) byRefusal++;
      table[got + '/' + shipped]++;
      const fmt = patches.length ? patches[0].strategy : 'none';
      byFormat[fmt] ??= { relay: { exact: 0, different: 0, refused: 0 }, shipped: { exact: 0, different: 0, refused: 0 } };
      byFormat[fmt].relay[got]++;
      byFormat[fmt].shipped[shipped]++;
      n++;
      if (got === 'exact') relayExact++;
      if (shipped === 'exact') shippedExact++;
      if (got !== 'exact' && shipped === 'exact') {
        worse.push(`${repo}/${c}: relay ${got}: ` + (got === 'refused' ? String(res.error).split('\n')[0] : firstDiff(res.content, expected)));
      }
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const pad = (s, w) => String(s).padStart(w);
console.log(`patch-accuracy on ${corpus}`);
console.log(`${n} cases (${liveChecked} run live through diff-apply 1.0.6, ${n - liveChecked} apply-multi-diff results from meta.json)\n`);
console.log(`relay \\ shipped  ${outcomes.map(o => pad(o, 10)).join('')}`);
for (const r of outcomes) console.log(`${r.padEnd(16)} ${outcomes.map(s => pad(table[r + '/' + s], 10)).join('')}`);
console.log(`\nexact: relay ${relayExact} (${(100 * relayExact / n).toFixed(1)}%; ${byRefusal} by refusing an answer the user undid), shipped engine ${shippedExact} (${(100 * shippedExact / n).toFixed(1)}%)`);
console.log(`relay different where the shipped engine was exact: ${table['different/exact']}`);
console.log(`\nper format (the first patch's strategy): relay exact / wrong / refused, shipped engine the same`);
for (const f of Object.keys(byFormat).sort()) {
  const r = byFormat[f].relay, s = byFormat[f].shipped;
  console.log(`${f.padEnd(22)} relay ${pad(r.exact, 4)} / ${pad(r.different, 3)} / ${pad(r.refused, 3)}    shipped ${pad(s.exact, 4)} / ${pad(s.different, 3)} / ${pad(s.refused, 3)}`);
}
if (metaDisagree.length) {
  console.log(`\nnote: diff-apply run here disagrees with meta.json on ${metaDisagree.length} case(s):`);
  for (const d of metaDisagree) console.log('  ' + d);
}
console.log(`\ncases where relay is not exact but the shipped engine is: ${worse.length}`);
for (const w of worse) console.log('  ' + w);
process.exit(worse.length ? 1 : 0);
