import { isPopefError, type PopefError } from '../errors.js';
import { ModelSet } from '../format/model-set.js';
import { diffModelSets, diffModelSetsReadingPayloads } from '../inspect/diff.js';
import { buildReport, type DumpReport } from '../inspect/report.js';
import { verifyModelSet } from '../inspect/verify.js';
import { BlobSource } from '../io/blob-source.js';
import type { ByteSource } from '../io/byte-source.js';
import { HttpSource } from '../io/http-source.js';
import { followLine } from '../present/follow-line.js';
import { humanBytes } from '../present/human-bytes.js';
import { checkConfigText } from '../triton/repository/check-text.js';
import type { Finding } from '../triton/repository/findings.js';
import { configFiles, type ConfigFormState } from './config-form.js';
import { esc } from '../present/html.js';
import { anchorsHtml, blobsHtml, diffHtml, metadataHtml, summaryHtml } from './sections.js';

/**
 * The viewer page: the library's reader, report, config generator,
 * validator and diff, run in the browser on files that never leave the
 * user's machine (or on URLs, read with Range requests as `popef dump URL`
 * reads them). Opening reads headers and metadata only, as the CLI does.
 */

interface Opened {
  readonly set: ModelSet;
  readonly report: DumpReport;
  readonly label: string;
  /** Read from files on this machine (not a URL): a diff may then read payloads whole, as popef diff does for local files. */
  readonly local: boolean;
}

let current: Opened | undefined;
let config: ReturnType<typeof configFiles> | undefined;

/** The element with this id, checked to be of the kind the code expects (page.html and this file must agree). */
function $<T extends HTMLElement = HTMLElement>(id: string, kind?: abstract new () => T): T {
  const el = document.getElementById(id);
  if (el === null || !(el instanceof (kind ?? HTMLElement))) throw new Error(`the page has no ${kind?.name ?? 'element'} #${id}`);
  return el as T;
}

function errorText(error: unknown): string {
  if (isPopefError(error)) return describeError(error);
  return error instanceof Error ? error.message : String(error);
}

/** The CLI's error line, less its "popef: error:" prefix: what, where, how to fix. */
function describeError(e: PopefError): string {
  const where = [e.file, e.offset === undefined ? undefined : `offset ${e.offset}`, e.field].filter((x) => x !== undefined).join(', ');
  return `${e.message}${where === '' ? '' : ` (${where})`} [${e.code}]${e.suggestion === undefined ? '' : `\nhint: ${e.suggestion}`}`;
}

function status(text: string, kind: 'info' | 'error' = 'info'): void {
  const el = $('status');
  el.textContent = text;
  el.className = kind;
}

async function open(sources: readonly ByteSource[], label: string, local: boolean): Promise<Opened> {
  const started = performance.now();
  const set = await ModelSet.open(sources);
  const report = buildReport(set);
  performance.mark('popef-summary', { detail: performance.now() - started });
  return { set, report, label, local };
}

async function sourcesOf(files: readonly File[]): Promise<ByteSource[]> {
  return Promise.resolve(files.map((f) => new BlobSource(f, f.name)));
}

async function show(sources: Promise<ByteSource[]>, label: string, local = true): Promise<void> {
  status(`opening ${label}...`);
  try {
    const opened = await open(await sources, label, local);
    await current?.set.close();
    current = opened;
    render();
    const bytes = opened.report.files.reduce((sum, f) => sum + f.size, 0);
    status(
      `${label}: ${opened.report.models.length} model(s), ${opened.report.blobs.length} blob(s), ${humanBytes(bytes)}; headers and metadata read`,
    );
  } catch (error) {
    status(`cannot open ${label}: ${errorText(error)}`, 'error');
  }
}

function render(): void {
  if (current === undefined) return;
  const { report } = current;
  $('summary').innerHTML = summaryHtml(report);
  $('anchors').innerHTML = anchorsHtml(report);
  $('metadata').innerHTML = metadataHtml(report);
  $('blobs').innerHTML = blobsHtml(report);
  $('verify-result').textContent = '';
  for (const id of ['model-sections', 'config-section', 'validate-section', 'diff-section']) $(id).hidden = false;
  renderNameInputs();
  regenerate();
}

/** One text box per user-provided anchor, holding the Triton name `popef config --name` would give. */
function renderNameInputs(): void {
  const anchors = current?.report.models[0]?.metadata?.anchors.filter((a) => a.role === 'user-input' || a.role === 'user-output') ?? [];
  $('names').innerHTML = anchors
    .map(
      (a, i) =>
        `<label for="name-${i}">${esc(a.role === 'user-input' ? 'input' : 'output')} anchor <code>${esc(a.name)}</code></label><input id="name-${i}" data-anchor="${esc(a.name)}" value="" placeholder="${esc(a.name)}" spellcheck="false">`,
    )
    .join('');
}

function formState(): ConfigFormState {
  const value = (id: string): string => $<HTMLInputElement>(id).value.trim();
  const names: [string, string][] = [];
  for (const input of document.querySelectorAll<HTMLInputElement>('#names input')) {
    const name = input.value.trim();
    if (name !== '' && input.dataset.anchor !== undefined) names.push([input.dataset.anchor, name]);
  }
  return {
    modelName: value('model-name'),
    names,
    maxBatchSize: value('max-batch-size'),
    deviceIterations: value('device-iterations'),
    batching: $('batching', HTMLSelectElement).value === 'none' ? 'none' : 'auto',
    dynamicBatching: $('dynamic-batching', HTMLInputElement).checked,
    preferredBatchSizes: value('preferred-batch-sizes'),
    maxQueueDelayUs: value('max-queue-delay'),
    parameters: value('parameters'),
    tritonVersion: value('triton-version'),
  };
}

function regenerate(): void {
  const model = current?.set.models[0];
  if (current === undefined || model?.metadata === undefined) return;
  try {
    config = configFiles(model.metadata, current.set.storedTensorNames, formState());
    $('config-pbtxt').textContent = config.pbtxt;
    $('name-map').textContent = config.nameMapText;
    $('config-error').textContent = config.batchExplanation;
    $('config-error').className = 'info';
  } catch (error) {
    config = undefined;
    $('config-error').textContent = errorText(error);
    $('config-error').className = 'error';
  }
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function validatePasted(): void {
  const model = current?.set.models[0];
  const out = $('findings');
  if (current === undefined || model?.metadata === undefined) return;
  const text = $('pasted', HTMLTextAreaElement).value;
  const modelName = formState().modelName || 'model';
  // The name map the config panel shows is the one a scaffolded repository would hold.
  const anchorOf = new Map((config?.nameMap ?? []).map(([anchor, name]) => [name, anchor] as const));
  const findings = checkConfigText(text, {
    model: modelName,
    file: `${modelName}/config.pbtxt`,
    metadata: model.metadata,
    storedTensorNames: current.set.storedTensorNames,
    anchorOf,
  });
  if (findings.length === 0) {
    out.innerHTML = '<p class="ok">No findings: the config passes the config and PopEF rules of popef validate.</p>';
    return;
  }
  out.innerHTML = `<ul>${findings.map(findingItem).join('')}</ul>`;
}

/** One finding of the pasted config, as popef validate reports it; a cause with what follows from it folded under it. */
function findingItem(f: Finding): string {
  const where = f.line === undefined ? '' : `<a href="#" data-line="${f.line}">${esc(`${f.file ?? ''}:${f.line}:${f.column ?? 0}`)}</a> `;
  const hint = f.hint === undefined ? '' : `<br><span class="hint">hint: ${esc(f.hint)}</span>`;
  const follow = followLine(f);
  const folded =
    follow === undefined ? '' : `<details><summary>${esc(follow)}</summary><ul>${(f.consequences ?? []).map(findingItem).join('')}</ul></details>`;
  return `<li class="${esc(f.severity)}"><span class="severity">${esc(f.severity)}</span> ${where}${esc(f.message)} <code>[${esc(f.rule)}]</code>${hint}${folded}</li>`;
}

/** Selects line `line` of the pasted config, so a finding's position leads to the text. */
function goToLine(line: number): void {
  const area = $('pasted', HTMLTextAreaElement);
  const lines = area.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((sum, l) => sum + l.length + 1, 0);
  area.focus();
  area.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
}

async function verify(): Promise<void> {
  if (current === undefined) return;
  const bar = $('verify-progress', HTMLProgressElement);
  const result = $('verify-result');
  bar.hidden = false;
  bar.value = 0;
  result.textContent = 'verifying...';
  const outcome = await verifyModelSet(current.set, (done, total) => {
    bar.max = total;
    bar.value = done;
  });
  bar.hidden = true;
  const { blobs, bytes } = outcome.report;
  result.className = outcome.errors.length === 0 ? 'ok' : 'error';
  result.textContent =
    outcome.errors.length === 0
      ? `Verified: every checksum of ${blobs} blob(s) (${humanBytes(bytes)}) matches.`
      : `Damage found in ${outcome.errors.length} blob(s):\n${outcome.errors.map(describeError).join('\n')}`;
}

async function diffWith(files: readonly File[]): Promise<void> {
  if (current === undefined || files.length === 0) return;
  const out = $('diff-result');
  try {
    const other = await ModelSet.open(await sourcesOf(files));
    try {
      // As popef diff: compressed executables are inflated only when both sides are local (a URL's payload would be fetched whole).
      const report = current.local ? await diffModelSetsReadingPayloads(current.set, other) : diffModelSets(current.set, other);
      out.innerHTML = diffHtml(report);
    } finally {
      await other.close();
    }
  } catch (error) {
    out.textContent = `cannot compare: ${errorText(error)}`;
  }
}

function wire(): void {
  $('file-input', HTMLInputElement).addEventListener('change', (event) => {
    const files = [...((event.target as HTMLInputElement).files ?? [])];
    if (files.length > 0) void show(sourcesOf(files), files.map((f) => f.name).join(' + '));
  });
  $('url-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const url = $('url-input', HTMLInputElement).value.trim();
    if (url !== '')
      void show(
        HttpSource.open(url).then((s) => [s]),
        url,
        false,
      );
  });
  const drop = $('drop-zone');
  drop.addEventListener('dragover', (event) => {
    event.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('over');
    const files = [...(event.dataTransfer?.files ?? [])];
    if (files.length > 0) void show(sourcesOf(files), files.map((f) => f.name).join(' + '));
  });
  $('config-form').addEventListener('input', regenerate);
  $('config-form').addEventListener('submit', (event) => event.preventDefault());
  $('copy-config').addEventListener('click', () => void navigator.clipboard.writeText(config?.pbtxt ?? ''));
  $('copy-name-map').addEventListener('click', () => void navigator.clipboard.writeText(config?.nameMapText ?? ''));
  $('download-config').addEventListener('click', () => config !== undefined && download('config.pbtxt', config.pbtxt));
  $('download-name-map').addEventListener('click', () => config !== undefined && download('name_map.json', config.nameMapText));
  $('validate-button').addEventListener('click', validatePasted);
  $('findings').addEventListener('click', (event) => {
    const line = (event.target as HTMLElement).dataset.line;
    if (line === undefined) return;
    event.preventDefault();
    goToLine(Number(line));
  });
  $('verify-button').addEventListener('click', () => void verify().catch((error: unknown) => status(`verify failed: ${errorText(error)}`, 'error')));
  $('diff-input', HTMLInputElement).addEventListener('change', (event) => void diffWith([...((event.target as HTMLInputElement).files ?? [])]));
}

/** Files `popef view FILE...` serves beside the page, listed in a JSON script element. */
function preload(): void {
  const list = document.getElementById('popef-preload')?.textContent ?? '';
  if (list.trim() === '') return;
  const files = JSON.parse(list) as { url: string; name: string }[];
  if (files.length === 0) return;
  // Files popef view serves from this machine, on 127.0.0.1: local, as popef diff of the same files would take them.
  void show(Promise.all(files.map((f) => HttpSource.open(new URL(f.url, location.href).href))), files.map((f) => f.name).join(' + '), true);
}

wire();
preload();
