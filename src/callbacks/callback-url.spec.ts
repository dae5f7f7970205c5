import { callbackSignaturePath, callbackUrlFor } from './callback-url.js';

describe('callbackUrlFor', () => {
  it('keeps the bare URL for the env supplier and appends /<name> for another', () => {
    expect(callbackUrlFor('https://relay.example/callbacks/upstream', 'main', 'main')).toBe('https://relay.example/callbacks/upstream');
    expect(callbackUrlFor('https://relay.example/callbacks/upstream', 'second', 'main')).toBe(
      'https://relay.example/callbacks/upstream/second',
    );
    expect(callbackUrlFor('https://relay.example/p/callbacks/upstream/?x=1', 'b-2', 'main')).toBe(
      'https://relay.example/p/callbacks/upstream/b-2?x=1',
    );
  });
});

describe('callbackSignaturePath', () => {
  it('takes the configured path, else the callback URL path, else the route', () => {
    expect(callbackSignaturePath('/api/v1/upstream/callback', 'https://r.example/callbacks/upstream', 'second', 'main')).toBe(
      '/api/v1/upstream/callback',
    );
    expect(callbackSignaturePath(null, 'https://r.example/hook', 'second', 'main')).toBe('/hook/second');
    expect(callbackSignaturePath(null, 'https://r.example/hook', 'main', 'main')).toBe('/hook');
    expect(callbackSignaturePath(null, null, 'second', 'main')).toBe('/callbacks/upstream/second');
    expect(callbackSignaturePath(null, null, 'main', 'main')).toBe('/callbacks/upstream');
  });
});
