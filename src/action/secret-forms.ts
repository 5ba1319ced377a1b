/**
 * The ways a secret is likely to be printed other than as itself: what a command that got hold
 * of a token (from `/proc/<pid>/environ`, or the `AUTHORIZATION: basic …` header that
 * `actions/checkout` leaves in `.git/config`) prints when it means to slip it past a masker that
 * only knows the plain value. Masking is a second line of defence: the first is that commands
 * never get the token (src/action/child-env.ts).
 */

/**
 * A shorter secret's forms would also hit ordinary text (a four-character password's hex is
 * eight digits, as a fingerprint's start is); a six-character one's base64 is eight characters.
 */
const MIN_SECRET_BYTES = 6;
const MIN_FORM_LENGTH = 8;

/**
 * The encoded forms of a secret: base64 and base64url at each of the three alignments it can
 * have inside a longer encoded text (only the characters that the secret's bytes alone decide,
 * so that whatever precedes or follows it, `echo`'s newline included, does not matter), and hex
 * in either case.
 * @param secret a token or password
 * @returns the forms, each at least {@link MIN_FORM_LENGTH} characters, without the secret itself;
 *   none for a secret under {@link MIN_SECRET_BYTES} bytes
 */
export function encodedForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  if (bytes.length < MIN_SECRET_BYTES) return [];
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // A base64 character holds 6 bits: the secret's bits run from 8*offset to 8*(offset+n).
    const first = Math.ceil((8 * offset) / 6);
    const end = Math.floor((8 * (offset + bytes.length)) / 6);
    const core = encoded.slice(first, end);
    forms.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  const hex = bytes.toString('hex');
  forms.push(hex, hex.toUpperCase());
  return [...new Set(forms)].filter((form) => form.length >= MIN_FORM_LENGTH && form !== secret);
}
