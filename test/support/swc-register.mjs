// Registers the SWC TypeScript loader relative to the repository (not the working directory), so
// that a child process may run `src/main.ts` from any folder. Set SWC_NODE_PROJECT to tsconfig.json.
import { register } from 'node:module';

register('@swc-node/register/esm', new URL('../../', import.meta.url));
