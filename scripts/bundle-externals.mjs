// Packages the CLI bundle leaves out and loads from node_modules when used
// (large, and needed only by serve, run --plugin triton and PNG inputs).
// scripts/build.mjs passes them to esbuild; eslint.config.js forbids a bare
// import() of them, which the launcher could not serve (src/ARCHITECTURE.md,
// "The launcher and import()").
export const BUNDLE_EXTERNALS = ['@grpc/grpc-js', 'protobufjs', 'ajv', 'pngjs', 'prom-client'];
