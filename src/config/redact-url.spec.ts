/** redactUrl: what of a URL from the environment may be printed. */
import { redactUrl } from './redact-url.js';

describe('redactUrl', () => {
  it.each([
    // user and password
    ['postgres://relay:s3cret@db:5432/relay', 'postgres://***@db:5432/relay'],
    ['postgres://relay@db/relay', 'postgres://***@db/relay'],
    ['https://u:s3cret@supplier.example/api/v1/upstream', 'https://***@supplier.example/api/v1/upstream'],
    ['mysql://u:s3cret@h/db', 'mysql://***@h/db'],
    // a password holding characters that end the authority early, or no host as a parser sees it
    ['postgres://u:s3@cret@h/db', 'postgres://***@h/db'],
    ['postgres://u:s3/cret@h/db', 'postgres://***@h/db'],
    ['postgres://u:s3#cret@h/db', 'postgres://***@h/db'],
    ['postgres://u:s3?cret@h/db', 'postgres://***@h/db'],
    ['postgres:u:s3cret@h/db', 'postgres:***@h/db'],
    ['postgres//u:s3cret@h/db', 'postgres//***@h/db'],
    // secret-looking parameters, in the query and the fragment
    ['https://shop.example/hook?token=s3cret&page=2', 'https://shop.example/hook?token=***&page=2'],
    [
      'https://x/a?api_key=s3cret&Signature=s3cret&sslpassword=s3cret&mode=x',
      'https://x/a?api_key=***&Signature=***&sslpassword=***&mode=x',
    ],
    ['https://x/a?access%5Ftoken=s3cret', 'https://x/a?access%5Ftoken=***'],
    ['https://x/a#access_token=s3cret&state=1', 'https://x/a#access_token=***&state=1'],
    ['https://u:s3cret@x/a?secret=s3cret#k', 'https://***@x/a?secret=***#k'],
    // nothing to hide: as written
    ['https://supplier.example/api/v1/upstream', 'https://supplier.example/api/v1/upstream'],
    ['http://h/@user/x?email=a@b.example', 'http://h/@user/x?email=a@b.example'],
    ['pglite://./data/pglite', 'pglite://./data/pglite'],
    ['not a url', 'not a url'],
  ])('%s → %s', (raw, printed) => {
    expect(redactUrl(raw)).toBe(printed);
    expect(redactUrl(raw)).not.toContain('s3cret');
  });
});
