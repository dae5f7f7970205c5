/** htm bound to Preact's h: tagged templates instead of JSX, no build-time transform. */
import htm from 'htm';
import { h } from 'preact';

export const html = htm.bind(h);
