import { Buffer } from 'buffer';

/**
 * The pbtxt lexer, parser and printer read config text as Latin-1 bytes
 * through Node's Buffer (one character per byte keeps line:column
 * byte-exact, and a browser's TextDecoder has no true Latin-1). In the page
 * the `buffer` package, the maintained browser implementation of that API,
 * stands in for it; scripts/build-view.mjs injects this module.
 */
export { Buffer };
