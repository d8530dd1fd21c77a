import { ErrorCode, PopefError } from '../errors.js';
import type { ByteSource } from './byte-source.js';
import { checkRange } from './range-check.js';

/**
 * A ByteSource over HTTP(S), read with Range requests, as @huggingface/gguf
 * reads model headers: opening a PopEF file over the network costs the
 * headers, descriptors and metadata, not the payloads. Small reads are
 * served from aligned blocks fetched once; large ones (--verify) are fetched
 * exactly. A byte budget bounds what metadata reading may pull, and an
 * overall deadline the time all the requests together may take.
 *
 * Fewer, larger requests: each miss fetches twice the span of the one before
 * (from one block up to `maxReadAhead`), so walking the headers of a file of
 * many blobs costs a few requests of growing size, not one per blob.
 *
 * Redirects are followed only to the same host, over the same scheme or an
 * upgrade from http to https: the Range requests and the byte budget are
 * spent where the user pointed, never on a host they did not name (an object
 * store's presigned URL is given directly), and never over a downgrade or a
 * data: or file: URL. The source is named by the URL actually read.
 */

export interface HttpSourceOptions {
  /** Per request (default 10 s). */
  readonly timeoutMs?: number;
  /** Total bytes this source may fetch (default 320 MiB); Infinity for --verify. */
  readonly maxBytes?: number;
  /** Read-ahead block for small reads (default 64 KiB). */
  readonly blockSize?: number;
  readonly maxRedirects?: number;
  /** All requests together, from open to the last byte (default 120 s; Infinity for none). */
  readonly deadlineMs?: number;
  /** The largest span one read-ahead request fetches (default 4 MiB). */
  readonly maxReadAhead?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export class HttpSource implements ByteSource {
  readonly name: string;
  private fetched = 0;
  private readonly blocks = new Map<number, Uint8Array>();
  private readAhead: number;
  private requestCount = 0;

  private constructor(
    name: string,
    private url: string,
    readonly size: number,
    private readonly options: Required<HttpSourceOptions>,
    private readonly deadline: AbortSignal | undefined,
  ) {
    this.name = name;
    this.readAhead = options.blockSize;
  }

  /** Requests made so far (redirects included). */
  get requests(): number {
    return this.requestCount;
  }

  /** Bytes received from the server so far. */
  get bytesFetched(): number {
    return this.fetched;
  }

  static async open(url: string, options: HttpSourceOptions = {}): Promise<HttpSource> {
    const o: Required<HttpSourceOptions> = {
      timeoutMs: options.timeoutMs ?? 10_000,
      // The metadata limit (256 MiB, FORMAT.md section 12) and room for the headers and descriptors around it.
      maxBytes: options.maxBytes ?? 320 * 1024 * 1024,
      blockSize: options.blockSize ?? 64 * 1024,
      maxRedirects: options.maxRedirects ?? 5,
      deadlineMs: options.deadlineMs ?? 120_000,
      maxReadAhead: Math.max(options.maxReadAhead ?? 4 * 1024 * 1024, options.blockSize ?? 64 * 1024),
    };
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
    if (scheme !== 'http' && scheme !== 'https') {
      throw new PopefError(ErrorCode.InvalidInput, `only http:// and https:// URLs are read, not ${scheme ?? 'this'}:`, {
        file: url,
        suggestion: 'give a local path or an http(s) URL',
      });
    }
    const deadline = Number.isFinite(o.deadlineMs) ? AbortSignal.timeout(o.deadlineMs) : undefined;
    // The first block tells the size (Content-Range) and whether ranges work at all.
    const probe = new HttpSource(url, url, Number.MAX_SAFE_INTEGER, o, deadline);
    const first = await probe.request(0, o.blockSize, 'first block', true);
    // Named by the URL read: after a redirect, that is the one the report is about.
    const source = new HttpSource(probe.url, probe.url, first.total, o, deadline);
    source.fetched = probe.fetched;
    source.requestCount = probe.requestCount;
    if (first.body.byteLength > 0) source.blocks.set(0, first.body);
    return source;
  }

  private fail(code: ErrorCode, message: string, suggestion?: string): PopefError {
    return new PopefError(code, message, { file: this.name, suggestion });
  }

  /** A fetch that ended on its signal: the overall deadline when that has passed, else this request's timeout. */
  private throwIfTimedOut(error: Error, field: string, what: string, suggestion: string): void {
    if (error.name !== 'TimeoutError' && error.name !== 'AbortError') return;
    this.checkDeadline(field);
    throw this.fail(ErrorCode.Timeout, `${what} within ${this.options.timeoutMs / 1000} s (reading ${field})`, suggestion);
  }

  /** One Range request (following redirects); checks status, Content-Range and length. */
  private async request(offset: number, length: number, field: string, probing = false): Promise<{ body: Uint8Array; total: number }> {
    if (this.fetched + length > this.options.maxBytes) {
      throw this.fail(
        ErrorCode.LimitExceeded,
        `reading ${field} would fetch more than ${this.options.maxBytes} bytes from the server`,
        'the metadata is unusually large or the file is damaged; download the file to inspect it',
      );
    }
    const seen = new Set<string>();
    let url = this.url;
    for (let hop = 0; ; hop++) {
      let response: Response;
      this.checkDeadline(field);
      this.requestCount += 1;
      try {
        const timeout = AbortSignal.timeout(this.options.timeoutMs);
        response = await fetch(url, {
          // Ranges are of the stored bytes: a compressed transfer would only hide their size.
          headers: { Range: `bytes=${offset}-${offset + length - 1}`, 'Accept-Encoding': 'identity' },
          redirect: 'manual',
          signal: this.deadline === undefined ? timeout : AbortSignal.any([timeout, this.deadline]),
        });
      } catch (error) {
        const e = error as Error;
        this.throwIfTimedOut(e, field, 'no answer from the server', 'check the URL and the network, then try again');
        throw this.fail(ErrorCode.Io, `cannot reach the server: ${(e.cause as Error | undefined)?.message ?? e.message}`, 'check the URL');
      }
      if (REDIRECTS.has(response.status)) {
        await response.body?.cancel();
        const location = response.headers.get('location');
        if (location === null) throw this.fail(ErrorCode.Io, `redirect ${response.status} without a Location header`);
        const next = this.redirectTarget(url, location, response.status);
        if (seen.has(next) || hop >= this.options.maxRedirects) {
          throw this.fail(
            ErrorCode.Io,
            seen.has(next) ? `redirect loop through ${next}` : `more than ${this.options.maxRedirects} redirects`,
            'check the URL',
          );
        }
        seen.add(next);
        url = next;
        continue;
      }
      this.url = url;
      const contentRange = response.headers.get('content-range');
      if (response.status === 416 && probing) {
        // Asked beyond the end: the total tells the (small) size.
        await response.body?.cancel();
        const total = /\/(\d+)$/.exec(contentRange ?? '')?.[1];
        if (total === undefined) throw this.fail(ErrorCode.Io, 'the server refused the range and gave no size');
        return { body: new Uint8Array(0), total: Number(total) };
      }
      if (response.status === 200) {
        await response.body?.cancel();
        throw this.fail(
          ErrorCode.Io,
          'the server does not support HTTP Range requests (it answered 200 with the whole file)',
          'serve the file from a server that supports ranges (most static servers and object stores do), or download it first',
        );
      }
      if (response.status !== 206) {
        await response.body?.cancel();
        throw this.fail(
          ErrorCode.Io,
          `the server answered ${response.status} ${response.statusText}`,
          response.status === 404 ? 'check the URL' : undefined,
        );
      }
      const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange ?? '');
      if (m === null || Number(m[1]) !== offset) {
        await response.body?.cancel();
        throw this.fail(
          ErrorCode.Io,
          `the server answered with Content-Range ${JSON.stringify(contentRange)} for bytes ${offset}-${offset + length - 1}`,
        );
      }
      const total = m[3] === '*' ? Number.NaN : Number(m[3]);
      const expected = Math.min(length, (Number.isNaN(total) ? offset + length : total) - offset);
      if (Number(m[2]) - offset + 1 !== expected) {
        await response.body?.cancel();
        throw this.fail(
          ErrorCode.Io,
          `the server answered with Content-Range ${JSON.stringify(contentRange)} for bytes ${offset}-${offset + length - 1}`,
        );
      }
      const body = await this.readBody(response, expected, offset, field);
      this.fetched += body.byteLength;
      if (body.byteLength < expected) {
        throw this.fail(
          ErrorCode.Truncated,
          `the server sent ${body.byteLength} bytes for a range of ${expected} at offset ${offset} (reading ${field})`,
          'the transfer was cut short: try again',
        );
      }
      return { body, total };
    }
  }

  /**
   * The body of a 206, read as it arrives into a buffer of the size asked
   * for: a server that sends more (or a compressed body that inflates to
   * more) is cut off at the first byte too many, one that has not finished
   * within the request's timeout is a timeout, one that closes early is a
   * truncation. Never the whole body first and the checks after.
   */
  private async readBody(response: Response, expected: number, offset: number, field: string): Promise<Uint8Array> {
    const out = new Uint8Array(expected);
    let done = 0;
    const reader = response.body?.getReader();
    if (reader === undefined) return out.subarray(0, 0);
    try {
      for (;;) {
        let step: { done: boolean; value?: Uint8Array };
        try {
          // The request's own timeout signal also ends a body that stalls.
          step = await reader.read();
        } catch (error) {
          this.throwIfTimedOut(error as Error, field, 'the server did not finish sending', 'check the server and the network, then try again');
          // The connection closed under us (undici says "terminated"): what arrived is short.
          break;
        }
        const chunk = step.value;
        if (step.done || chunk === undefined) break;
        if (done + chunk.byteLength > expected) {
          throw this.fail(
            ErrorCode.BadStructure,
            `the server sent more than the ${expected} bytes of the range at offset ${offset} (reading ${field})`,
            'the server does not honour Range requests correctly: download the file instead',
          );
        }
        out.set(chunk, done);
        done += chunk.byteLength;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    return done === expected ? out : out.subarray(0, done);
  }

  /** The overall deadline: one clear error naming its setting, whichever request it cut. */
  private checkDeadline(field: string): void {
    if (this.deadline?.aborted === true) {
      throw this.fail(
        ErrorCode.Timeout,
        `reading from the server took longer than ${this.options.deadlineMs / 1000} s in all (stopped at ${field})`,
        'the server is slow: raise POPEF_HTTP_DEADLINE_MS, or download the file first',
      );
    }
  }

  /** Where a redirect may lead (see the comment at the top); refuses anywhere else. */
  private redirectTarget(from: string, location: string, status: number): string {
    let next: URL;
    try {
      next = new URL(location, from);
    } catch {
      throw this.fail(ErrorCode.Io, `redirect ${status} to an invalid URL ${JSON.stringify(location.slice(0, 200))}`);
    }
    const here = new URL(from);
    const why =
      next.protocol !== 'http:' && next.protocol !== 'https:'
        ? `to a ${next.protocol} URL`
        : here.protocol === 'https:' && next.protocol === 'http:'
          ? 'from https to http (a downgrade)'
          : next.hostname !== here.hostname
            ? `to another host (${next.host})`
            : undefined;
    if (why !== undefined) {
      throw this.fail(
        ErrorCode.Io,
        `redirect ${status} ${why} is not followed: ${next.protocol === 'data:' ? 'data:...' : next.toString().slice(0, 300)}`,
        'if you trust that URL, give it directly',
      );
    }
    return next.toString();
  }

  async read(offset: number, length: number, field: string): Promise<Uint8Array> {
    checkRange(this.name, this.size, offset, length, field);
    if (length === 0) return new Uint8Array(0);
    const block = this.options.blockSize;
    if (length > block) return (await this.request(offset, length, field)).body;
    const out = new Uint8Array(length);
    for (let at = offset; at < offset + length;) {
      const index = Math.floor(at / block);
      let data = this.blocks.get(index);
      if (data === undefined) {
        data = await this.fetchBlocks(index, field);
      }
      const from = at - index * block;
      const n = Math.min(data.byteLength - from, offset + length - at);
      out.set(data.subarray(from, from + n), at - offset);
      at += n;
    }
    return out;
  }

  /**
   * Block `index` and as many after it (not yet held) as the read-ahead
   * span covers, in one request; the span doubles each time, within the
   * budget left.
   */
  private async fetchBlocks(index: number, field: string): Promise<Uint8Array> {
    const block = this.options.blockSize;
    const start = index * block;
    let count = 1;
    const budgetBlocks = Math.floor((this.options.maxBytes - this.fetched) / block / 2);
    const wanted = Math.max(1, Math.min(this.readAhead / block, budgetBlocks));
    while (count < wanted && start + count * block < this.size && !this.blocks.has(index + count)) count += 1;
    const body = (await this.request(start, Math.min(count * block, this.size - start), field)).body;
    for (let i = 0; i * block < body.byteLength; i++) this.blocks.set(index + i, body.subarray(i * block, (i + 1) * block));
    this.readAhead = Math.min(this.readAhead * 2, this.options.maxReadAhead);
    return this.blocks.get(index) ?? body.subarray(0, 0);
  }

  close(): Promise<void> {
    this.blocks.clear();
    return Promise.resolve();
  }
}
