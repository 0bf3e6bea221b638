import{a,b,c}from"./chunk-5I2ATXUF.js";import"./chunk-NKYLZW72.js";export{b as Credentials,c as TestOutcome,a as providerWords};
