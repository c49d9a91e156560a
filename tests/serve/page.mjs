// The browser side of tests/test_serve.c: drives the chat page `pocketflash serve` answers GET /
// with, in Debian's chromium through playwright-core, and writes what the page showed as JSON to
// OUT; the C test judges it. Every wait is for the page's state (a pane's data-state), never a
// fixed time.
//   node page.mjs BASE chat OUT SHOT PROMPT MAX [SPEC BLOCK]  PROMPT typed and sent (Enter), then
//                                   in a new chat again with "plain vs speculative" on (and the
//                                   strategy SPEC, block BLOCK, if given); SHOT: a screenshot
//   node page.mjs BASE key OUT SHOT PROMPT MAX KEY  sent without the API key (refused), then with it
// PF_PLAYWRIGHT_DIR names the folder playwright-core was installed into (mk/serve.mk), PF_CHROMIUM
// the browser (default /usr/bin/chromium).
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const [base, mode, out, shot, prompt, max, arg7, arg8] = process.argv.slice(2);
const require = createRequire(`${process.env.PF_PLAYWRIGHT_DIR}/package.json`);
const { chromium } = require('playwright-core');
const WAIT = 300000; // generous: the machine may be busy; a pass never depends on it

// The last turn's panes once all of them are done or failed.
async function turn(page) {
  await page.waitForSelector('#log .answers:last-of-type[data-done="1"]', { timeout: WAIT });
  return page.$$eval('#log .answers:last-of-type .pane', (panes) => panes.map((p) => ({
    kind: p.classList.contains('plain') ? 'plain' : 'spec', state: p.dataset.state,
    text: p.querySelector('.text').textContent, stats: p.querySelector('.stats').textContent,
    tokens: +(p.dataset.tokens || 0), drafted: +(p.dataset.drafted || 0), strategy: p.dataset.strategy || '',
    drafter: p.dataset.drafter || '',
    spans_drafted: p.querySelectorAll('.tok.d').length, spans_target: p.querySelectorAll('.tok.t').length })));
}

async function ask(page, text) {
  await page.locator('#prompt').pressSequentially(text);
  await page.locator('#prompt').press('Enter');
  return turn(page);
}

const browser = await chromium.launch({ executablePath: process.env.PF_CHROMIUM || '/usr/bin/chromium',
                                        args: ['--headless', '--no-sandbox', '--disable-gpu'], timeout: WAIT });
const result = {};
try {
  const page = await browser.newPage({ viewport: { width: 960, height: 600 } });
  page.setDefaultTimeout(WAIT);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${base}/`);
  await page.fill('#max', max);
  if (mode === 'chat') {
    result.single = await ask(page, prompt);
    await page.click('#clear');
    await page.check('#compare');
    if (arg7) await page.selectOption('#spec', arg7);
    if (arg8) await page.fill('#block', arg8);
    result.side = await ask(page, prompt);
    result.speedup = await page.$eval('#log .answers:last-of-type', (a) => a.querySelector('.speedup')?.textContent ?? '');
    await page.screenshot({ path: shot });
  } else {
    result.refused = await ask(page, prompt);
    result.model_before = await page.textContent('#model');
    await page.fill('#key', arg7);
    await page.locator('#key').dispatchEvent('change');
    await page.click('#clear');
    result.accepted = await ask(page, prompt);
    await page.waitForFunction(() => document.getElementById('model').textContent !== 'API key needed', null,
                               { timeout: WAIT });
    result.model_after = await page.textContent('#model');
  }
  result.page_errors = errors;
} finally {
  await browser.close();
}
writeFileSync(out, JSON.stringify(result, null, 1));
