/**
 * The Triton release the Poplar backend documents: what generated configs
 * and `popef validate` check fields against unless told otherwise. A leaf
 * module, so that the CLI's option definitions can name it without loading
 * the printer and the Triton schema behind it.
 */
export const DEFAULT_TRITON_VERSION = '21.05';
