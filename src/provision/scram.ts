/**
 * A SCRAM-SHA-256 password verifier (RFC 5802, RFC 7677), the form PostgreSQL stores in
 * `pg_authid.rolpassword`. `CREATE ROLE … PASSWORD '<verifier>'` stores it as given, so the
 * password itself never reaches the server: not its statement log (`log_statement = 'ddl'`), not
 * `pg_stat_statements`, not an error message.
 */
import crypto from 'node:crypto';

/** PostgreSQL's default (`scram_iterations`). */
const ITERATIONS = 4096;

const hmac = (key: Buffer, text: string) => crypto.createHmac('sha256', key).update(text).digest();

/**
 * @param password the password (ASCII: SASLprep leaves it unchanged)
 * @param salt 16 random bytes by default; given in tests
 * @returns `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64 parts
 */
export function scramVerifier(password: string, salt: Buffer = crypto.randomBytes(16)): string {
  const salted = crypto.pbkdf2Sync(password, salt, ITERATIONS, 32, 'sha256');
  const storedKey = crypto.createHash('sha256').update(hmac(salted, 'Client Key')).digest();
  const serverKey = hmac(salted, 'Server Key');
  return `SCRAM-SHA-256$${ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
