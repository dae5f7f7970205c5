/** Where callbacks are received (`POST /callbacks/upstream`, and `/callbacks/upstream/{supplier}`). */
export const CALLBACK_ROUTE = '/callbacks/upstream';
