/** pg's value serialisation for statement parameters (`pg/lib/utils.js`, exported by its package). */
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
