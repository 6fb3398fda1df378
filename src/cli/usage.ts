// A command-line usage mistake: reported with the usage text and exit code 2.
export class UsageError extends Error {}
