export {
  RedlockExceptionFilter,
  type RedlockHttpAnswer,
  type RedlockAnswerContext,
} from './redlock-exception.filter.js';
