import { Label } from '../../http/schemas.js';

/**
 * An API key's name, the one rule for `affitrack keys create --name`: 1 to 100 characters, not
 * only white space (a blank name lists as an empty cell), the length the dashboard's key form takes.
 */
export const ApiKeyName = Label(100);
