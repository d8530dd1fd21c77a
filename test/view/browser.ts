import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { PopefWriter } from '../../src/format/writer.js';
import { emptyMetadata, type Anchor } from '../../src/schema/model.js';
import { ROOT } from '../helpers.js';

/**
 * Debian's Chromium, driven by playwright-core (which downloads no browser
 * of its own), for the viewer's tests. Without /usr/bin/chromium the suites
 * skip on a developer's machine and fail in CI, where .ci/run installs it.
 */
export const CHROMIUM = process.env.POPEF_CHROMIUM ?? '/usr/bin/chromium';

export const browserMissing: string | false =
  process.env.CI === 'true' || existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set POPEF_CHROMIUM)`;

/** Screenshots land here, for CI to keep as artifacts (git-ignored). */
export const ARTIFACTS = join(ROOT, '.artifacts', 'view');

export async function launch(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  // The flags keep a headless Chromium from reaching for Google's services, which this machine cannot reach.
  return await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Collects the page's uncaught errors, so that a test can require none. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** A 4 GiB model (a 4 GiB executable, 200 anchors), as test/bench/run.ts makes for the CLI's figures. */
export async function writeBigModel(path: string): Promise<void> {
  const chunk = new Uint8Array(64 * 1024 * 1024);
  async function* body(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < 64; i++) yield chunk;
    await Promise.resolve();
  }
  const anchors: Anchor[] = Array.from({ length: 200 }, (_, i) => ({
    name: `input/${i}`,
    handle: `h2d_input/${i}`,
    tensorInfo: { dtype: 'F16', shape: [8, 384, 1024] },
    isPerReplica: false,
    type: 'INPUT',
    programs: [5],
  }));
  const w = await PopefWriter.create(path, { force: true });
  await w.writeExecutable('big', body());
  await w.writeMetadata({ ...emptyMetadata('big'), anchors, programFlow: { load: [0], main: [5], save: [] } });
  await w.close();
}
