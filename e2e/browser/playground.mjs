// playground.mjs: the chatgw playground driven in headless Chromium, as a
// user would: paste a token, chat (streamed), attach an image, reload, find
// the conversation in the sidebar, continue it, copy it as curl, delete it,
// look at it 390 px wide and in the dark, and paste a wrong token.
//
// Environment:
//   GW_BASE_URL     the gateway's root, such as http://127.0.0.1:8080
//   GW_TOKEN        a bearer token allowed to chat on /c1
//   CHROMIUM        the Chromium binary (default: chromium on the PATH)
//   GW_SCREENSHOTS  where screenshots go (default: ./screenshots)
//   GW_MARKDOWN     "1" when the backend answers with the markdown sample of
//                   e2e/browser_test.go, so that its rendering is checked
//
// It prints one line per check ("ok <name>" or "FAIL <name>: why"), the
// screenshot directory, then "N passed, N failed", and exits 1 when a check
// failed. Each check depends on the ones before it, so it stops at the first
// failure.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { resolve, join } from 'node:path';

const base = (process.env.GW_BASE_URL || '').replace(/\/+$/, '');
const token = process.env.GW_TOKEN;
if (!base || !token) {
  console.error('set GW_BASE_URL and GW_TOKEN');
  process.exit(2);
}
const shots = resolve(process.env.GW_SCREENSHOTS || 'screenshots');
mkdirSync(shots, { recursive: true });
console.log(`screenshots in ${shots}`);
const markdown = process.env.GW_MARKDOWN === '1';

// A 2x2 PNG, small enough to inline; the gateway decodes it.
const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==', 'base64');

let passed = 0;
let failed = 0;
const problems = []; // console errors and CSP refusals seen on the page

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok ${name}`);
    return true;
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${String(e && e.message || e).split('\n')[0]}`);
    return false;
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || 'chromium',
  headless: true,
  // root in a container has no user namespace for Chromium's sandbox
  args: ['--no-sandbox'],
});
const context = await browser.newContext({ viewport: { width: 1100, height: 760 }, colorScheme: 'light' });
const page = await context.newPage();
page.setDefaultTimeout(8000);
page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
page.on('pageerror', (e) => problems.push(String(e)));
const shot = (name) => page.screenshot({ path: join(shots, name + '.png') });

const assistant = page.locator('.msg.assistant');
const sidebarItems = page.locator('#conversations li');

// run runs the checks in order and stops at the first failure.
async function run() {
  if (!await check('page loads with its settings open', async () => {
    await page.goto(base + '/playground');
    await page.locator('#token').waitFor({ state: 'visible' });
  })) return;

  if (!await check('a pasted token loads the chat models', async () => {
    await page.locator('#token').fill(token);
    await page.locator('#token').press('Tab');
    await page.locator('#settings').waitFor({ state: 'hidden' });
    const options = await page.locator('#model option').allTextContents();
    assert(options.length > 1, `model options: ${options}`);
    assert(!options.some((o) => /embed|image|transcribe/.test(o)), `non-chat models listed: ${options}`);
    await shot('01-token');
  })) return;

  if (!await check('a message streams its reply', async () => {
    await page.locator('#input').fill('Hello, playground');
    await page.locator('#input').press('Enter');
    await page.locator('#stop').waitFor({ state: 'visible' });
    const body = assistant.last().locator('.body');
    await page.waitForFunction((el) => el.textContent.length > 0, await body.elementHandle());
    const early = (await body.textContent()).length;
    const stopVisible = await page.locator('#stop').isVisible();
    await assistant.last().locator('.stats').waitFor();
    const full = (await body.textContent()).length;
    assert(stopVisible && early < full, `no streaming seen: ${early} chars while streaming, ${full} at the end`);
    const stats = await assistant.last().locator('.stats').textContent();
    assert(/first token/.test(stats) && /total/.test(stats) && /tokens/.test(stats), `stats: ${stats}`);
    assert(await page.locator('#send').isVisible(), 'Send is not back after the answer');
    await shot('02-streamed');
  })) return;

  if (markdown && !await check('markdown renders as elements, markup in the reply stays text', async () => {
    const body = assistant.last().locator('.body');
    assert(await body.locator('strong').count() > 0, 'no <strong>');
    assert((await body.locator('pre code').textContent()).includes('fmt.Println'), 'no code block');
    assert(await body.locator('img').count() === 0, 'the reply injected an <img>');
    assert(await body.locator('a').count() === 0, 'a script link became an anchor');
    assert((await body.textContent()).includes('<img src=x'), 'the markup is not shown as text');
  })) return;

  if (!await check('an attached image is previewed and sent', async () => {
    await page.locator('#file').setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: png });
    await page.locator('#attachments img').waitFor();
    await shot('03-attachment');
    await page.locator('#input').fill('What is in this picture?');
    await page.locator('#send').click();
    await page.locator('.msg.user .thumbs img').waitFor();
    await assistant.nth(1).locator('.stats').waitFor();
    assert(await page.locator('#attachments').isHidden(), 'the attachment stayed after sending');
  })) return;

  if (!await check('after a reload the conversation is in the sidebar', async () => {
    await page.reload();
    await sidebarItems.first().waitFor();
    assert(await sidebarItems.count() === 1, `${await sidebarItems.count()} conversations listed`);
    const meta = await sidebarItems.first().locator('.conv-meta').textContent();
    assert(meta.startsWith('4 messages'), `sidebar says ${meta}`);
    const title = await sidebarItems.first().locator('.conv-title').textContent();
    assert(title === 'Hello, playground', `title ${title}`);
  })) return;

  if (!await check('clicking it loads it, and it can be continued', async () => {
    await sidebarItems.first().locator('.conv-open').click();
    await page.waitForFunction(() => document.querySelectorAll('.msg').length === 4);
    assert(await page.locator('.msg.user .thumbs img').count() === 1, 'the stored image is not shown');
    await page.locator('#input').fill('And one more thing');
    await page.locator('#input').press('Enter');
    await assistant.nth(2).locator('.stats').waitFor();
    await page.waitForFunction(() => {
      const m = document.querySelector('#conversations li .conv-meta');
      return m && m.textContent.startsWith('6 messages');
    });
    assert(await sidebarItems.count() === 1, 'continuing started another conversation');
    await shot('04-continued');
  })) return;

  if (!await check('copy as curl stands $TOKEN for the token', async () => {
    await page.locator('#copy-curl').click();
    const text = await page.locator('#curl-text').inputValue();
    assert(text.includes('$TOKEN') && !text.includes(token), 'the token is in the curl line');
    assert(text.includes('c1/chat') && text.includes('conversation_id'), `curl: ${text.slice(0, 200)}`);
    await page.locator('#curl-close').click();
  })) return;

  if (!await check('a 390 px wide window has no sideways scroll', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await shot('05-narrow');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert(width <= 390, `page is ${width} px wide`);
    await page.locator('#open-side').click();
    await shot('06-narrow-sidebar');
    await page.locator('#close-side').click();
    await page.waitForTimeout(300); // the sidebar slides out
    await page.emulateMedia({ colorScheme: 'dark' });
    await shot('07-narrow-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1100, height: 760 });
  })) return;

  if (!await check('delete asks first, then removes the conversation', async () => {
    let asked = '';
    page.once('dialog', (d) => { asked = d.message(); d.accept(); });
    await sidebarItems.first().locator('.conv-delete').click();
    await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 0);
    assert(asked.startsWith('Delete'), `confirmation: ${asked}`);
    assert(await page.locator('.msg').count() === 0, 'the deleted conversation is still shown');
  })) return;

  await check('a wrong token shows its 401 at once', async () => {
    await page.locator('#toggle-settings').click();
    await page.locator('#token').fill('not-a-valid-token');
    await page.locator('#token').press('Tab');
    const card = page.locator('.card.error');
    await card.waitFor({ timeout: 3000 });
    const text = await card.textContent();
    assert(text.includes('401') && text.includes('invalid_authorization'), `error card: ${text}`);
    await shot('08-bad-token');
  });

  await check('no console error or CSP refusal on the page', async () => {
    // the wrong token's 401 is logged by Chromium as a failed resource
    const real = problems.filter((p) => !/status of 401/.test(p));
    assert(real.length === 0, real.join(' | '));
  });
}

try {
  await run();
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
