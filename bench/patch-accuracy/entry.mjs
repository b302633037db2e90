// diff-apply's ESM build imports without file extensions, which node refuses;
// esbuild bundles it into one file node can load.
export { newUnifiedDiffStrategyService, multiSearchReplaceService, unifiedDiffService } from 'diff-apply';
