/**
 * Runs the sample shop's sessions (checkouts, storefront reads, a back office) against `url`, a
 * database with the shop's migrations and seed, and resolves once every session has ended its
 * connection.
 */
export function driveShop(url: string): Promise<void>;
