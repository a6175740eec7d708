export { RedlockExceptionFilter, type RedlockHttpAnswer } from './redlock-exception.filter.js';
