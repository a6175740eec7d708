export { Locked, type LockedOptions } from './locked.decorator.js';
