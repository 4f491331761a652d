export { mapLimit } from '../../lib/map-limit.js';
