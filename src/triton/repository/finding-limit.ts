/**
 * The default of ValidateOptions.maxFindingsPerRule (and of validate's
 * --max-findings-per-rule). A leaf module, so that the CLI's option
 * definitions can name it without loading the validator.
 */
export const MAX_FINDINGS_PER_RULE = 100;
